#include "mount/cli/csv.h"

namespace tabletfs::cli {

int CsvReader::Get() {
  const int c = in_.rdbuf()->sbumpc();
  if (c == std::char_traits<char>::eof()) return -1;
  ++bytes_read_;
  if (c == '\n') ++line_;
  return c;
}

int CsvReader::Peek() {
  const int c = in_.rdbuf()->sgetc();
  return c == std::char_traits<char>::eof() ? -1 : c;
}

bool CsvReader::Next(std::vector<CsvField>* fields) {
  fields->clear();
  if (!status_.ok()) return false;
  // Skip empty lines.
  for (;;) {
    const int c = Peek();
    if (c == '\n') {
      Get();
    } else if (c == '\r') {
      Get();
      if (Peek() == '\n') Get();
    } else {
      break;
    }
  }
  if (Peek() < 0) return false;
  record_line_ = line_;
  CsvField field;
  for (;;) {
    int c = Get();
    if (c == '"' && field.text.empty() && !field.quoted) {
      field.quoted = true;
      for (;;) {
        c = Get();
        if (c < 0) {
          status_ = Status::InvalidArgument(
              "line " + std::to_string(record_line_) +
              ": a quoted field is not closed before the end of the file");
          return false;
        }
        if (c == '"') {
          if (Peek() == '"') {
            Get();
            field.text.push_back('"');
            continue;
          }
          break;
        }
        field.text.push_back(static_cast<char>(c));
      }
      c = Get();
      if (c >= 0 && c != ',' && c != '\n' && c != '\r') {
        status_ = Status::InvalidArgument(
            "line " + std::to_string(line_) +
            ": unexpected character after a closing quote (expected , or "
            "end of line)");
        return false;
      }
    }
    if (c < 0 || c == '\n' || c == '\r' || c == ',') {
      fields->push_back(std::move(field));
      field = CsvField();
      if (c == ',') continue;
      if (c == '\r' && Peek() == '\n') Get();
      return true;
    }
    if (field.quoted) {
      // Unreachable: handled above.
      continue;
    }
    field.text.push_back(static_cast<char>(c));
  }
}

void AppendCsvField(std::string* out, std::string_view field,
                    bool force_quotes) {
  bool quote = force_quotes;
  if (!field.empty() && (field.front() == ' ' || field.back() == ' ')) {
    quote = true;
  }
  for (const char c : field) {
    if (c == ',' || c == '"' || c == '\r' || c == '\n') {
      quote = true;
      break;
    }
  }
  if (!quote) {
    out->append(field);
    return;
  }
  out->push_back('"');
  for (const char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace tabletfs::cli
