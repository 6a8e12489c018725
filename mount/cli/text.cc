#include "mount/cli/text.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "fs/timestamp.h"

namespace tabletfs::cli {
namespace {

bool IsC1Control(std::string_view text, size_t i, size_t len) {
  return len == 2 && static_cast<unsigned char>(text[i]) == 0xC2 &&
         static_cast<unsigned char>(text[i + 1]) < 0xA0;
}

constexpr char kHex[] = "0123456789abcdef";

void AppendHexEscape(std::string* out, unsigned char c, const char* prefix) {
  out->append(prefix);
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
// (Howard Hinnant's civil_from_days).
void CivilFromDays(int64_t days, int64_t* year, unsigned* month,
                   unsigned* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *day = doy - (153 * mp + 2) / 5 + 1;
  *month = mp < 10 ? mp + 3 : mp - 9;
  *year = static_cast<int64_t>(yoe) + era * 400 + (*month <= 2 ? 1 : 0);
}

}  // namespace

bool IsPlainText(std::string_view text) {
  if (!text.empty() && text[0] == '"') return false;
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return false;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F || IsC1Control(text, i, n)) return false;
    i += n;
  }
  return true;
}

std::string QuoteBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      AppendHexEscape(&out, c, "\\x");
      ++i;
      continue;
    }
    if (n > 1) {
      if (IsC1Control(text, i, n)) {
        AppendHexEscape(&out, static_cast<unsigned char>(text[i + 1]), "\\u00");
      } else {
        out.append(text.substr(i, n));
      }
      i += n;
      continue;
    }
    switch (c) {
      case '\a':
        out.append("\\a");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\v':
        out.append("\\v");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '"':
        out.append("\\\"");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          AppendHexEscape(&out, c, "\\x");
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

std::string ShowKey(std::string_view text) {
  return IsPlainText(text) ? std::string(text) : QuoteBytes(text);
}

std::string FormatCbtTimestamp(int64_t micros) {
  constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
  int64_t days = micros / kMicrosPerDay;
  int64_t rest = micros % kMicrosPerDay;
  if (rest < 0) {
    rest += kMicrosPerDay;
    --days;
  }
  int64_t year;
  unsigned month, day;
  CivilFromDays(days, &year, &month, &day);
  const int64_t seconds = rest / 1000000;
  char buf[64];
  std::snprintf(
      buf, sizeof(buf), "%04lld/%02u/%02u-%02d:%02d:%02d.%06d",
      static_cast<long long>(year), month, day,
      static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60 % 60),
      static_cast<int>(seconds % 60), static_cast<int>(rest % 1000000));
  return buf;
}

std::optional<int64_t> ParseInt64(std::string_view text) {
  if (text.empty() || text[0] == '+') return std::nullopt;
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<uint64_t> ParseUint64(std::string_view text) {
  if (text.empty() || text[0] == '-' || text[0] == '+') return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

Result<int64_t> ParseTime(std::string_view text) {
  int64_t micros = 0;
  fs::FsError e = fs::ParseTimestamp(text, &micros);
  if (!e.ok()) {
    return Status::InvalidArgument(
        "bad time '" + std::string(text) +
        "': expected microseconds since the epoch or ISO-8601 UTC such as "
        "2026-11-21T10:00:00Z");
  }
  return micros;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B",
                  static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string CbtPolicyText(const GcPolicy& policy) {
  constexpr int64_t kMinute = 60'000'000;
  constexpr int64_t kHour = 60 * kMinute;
  constexpr int64_t kDay = 24 * kHour;
  switch (policy.kind()) {
    case GcPolicy::Kind::kNever:
      return "";
    case GcPolicy::Kind::kMaxVersions:
      return "versions() > " + std::to_string(policy.max_versions());
    case GcPolicy::Kind::kMaxAge: {
      // Bigtable keeps max_age as a protobuf Duration and cbt prints its
      // seconds; fractions of a second do not show.
      const int64_t age = policy.max_age_micros() / 1'000'000 * 1'000'000;
      std::string text = "age() > ";
      if (age % kDay == 0) return text + std::to_string(age / kDay) + "d";
      if (age % kHour == 0) return text + std::to_string(age / kHour) + "h";
      if (age % kMinute == 0) {
        return text + std::to_string(age / kMinute) + "m";
      }
      return text + std::to_string(age);
    }
    case GcPolicy::Kind::kAnd:
    case GcPolicy::Kind::kOr: {
      // Appended, not "(" + temporary: GCC 12 misreads that as an
      // overlapping copy (-Wrestrict, GCC bug 105329).
      std::string text = "(";
      text += CbtPolicyText(policy.left());
      text += policy.kind() == GcPolicy::Kind::kAnd ? " && " : " || ";
      text += CbtPolicyText(policy.right());
      text += ')';
      return text;
    }
  }
  return "";
}

std::string TabAligned(const std::vector<std::vector<std::string>>& lines) {
  constexpr size_t kMinWidth = 10, kTabWidth = 8, kPadding = 4;
  // Display width: code points, as tabwriter counts runes.
  const auto width = [](std::string_view text) {
    size_t n = 0;
    for (const char c : text) {
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    }
    return n;
  };
  std::vector<size_t> columns;
  for (const auto& line : lines) {
    for (size_t c = 0; c + 1 < line.size(); ++c) {
      if (columns.size() <= c) columns.push_back(kMinWidth);
      columns[c] = std::max(columns[c], width(line[c]) + kPadding);
    }
  }
  for (size_t& w : columns) w = (w + kTabWidth - 1) / kTabWidth * kTabWidth;
  std::string out;
  for (const auto& line : lines) {
    for (size_t c = 0; c < line.size(); ++c) {
      out += line[c];
      if (c + 1 == line.size()) break;
      const size_t pad = columns[c] - width(line[c]);
      out.append((pad + kTabWidth - 1) / kTabWidth, '\t');
    }
    out += '\n';
  }
  return out;
}

}  // namespace tabletfs::cli
