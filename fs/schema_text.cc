#include "fs/schema_text.h"

#include <cerrno>

namespace tabletfs::fs {
namespace {

constexpr std::string_view kBlanks = " \t\r";

std::string_view Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(kBlanks);
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(kBlanks);
  return s.substr(begin, end - begin + 1);
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kLz4:
      return "lz4";
  }
  return "lz4";
}

// Applies one line (without its '\n') to *settings. `where` ("line 3: ")
// prefixes every reason.
FsError ApplyLine(std::string_view raw, const std::string& where,
                  FamilySettings* settings) {
  const std::string_view line = Trim(raw);
  if (line.empty() || line.front() == '#') return FsError::Ok();
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    return FsError::Of(EINVAL, where + "expected 'key = value', got '" +
                                   std::string(line) + "'");
  }
  const std::string_view key = Trim(line.substr(0, eq));
  const std::string_view value = Trim(line.substr(eq + 1));
  if (key == "gcpolicy") {
    if (value.empty()) {
      return FsError::Of(EINVAL, where +
                                     "gcpolicy has no value; expected "
                                     "e.g. never, maxversions=3, "
                                     "maxage=7d, maxage=1d or "
                                     "maxversions=2");
    }
    Result<GcPolicy> policy = GcPolicy::Parse(value);
    if (!policy.ok()) {
      return FsError::Of(EINVAL, where + "bad gcpolicy '" + std::string(value) +
                                     "': " + policy.status().message());
    }
    settings->gc_policy = *std::move(policy);
    return FsError::Ok();
  }
  if (key == "compression") {
    if (value == "lz4") {
      settings->compression = Compression::kLz4;
    } else if (value == "none") {
      settings->compression = Compression::kNone;
    } else {
      return FsError::Of(EINVAL, where + "bad compression '" +
                                     std::string(value) +
                                     "', expected lz4 or none");
    }
    return FsError::Ok();
  }
  if (key.empty()) {
    return FsError::Of(EINVAL, where +
                                   "no key before '='; expected "
                                   "'gcpolicy = ...' or "
                                   "'compression = ...'");
  }
  return FsError::Of(EINVAL, where + "unknown key '" + std::string(key) +
                                 "', expected gcpolicy or compression "
                                 "(owner and mode are set by chown/chmod)");
}

}  // namespace

std::string FormatFamilySettings(const FamilySettings& s) {
  std::string out = "gcpolicy = " + s.gc_policy.ToString() + "\n";
  out += "compression = ";
  out += CompressionName(s.compression);
  out += "\n";
  return out;
}

FsError ParseFamilySettings(std::string_view text,
                            const FamilySettings& current,
                            FamilySettings* out) {
  FamilySettings next = current;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    TABLETFS_FS_RETURN_IF_ERROR(
        ApplyLine(line, "line " + std::to_string(line_number) + ": ", &next));
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  *out = std::move(next);
  return FsError::Ok();
}

FsError ValidateSettingsLine(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.find('\n') != std::string_view::npos) {
    return FsError::Of(EINVAL,
                       "more than one line given to "
                       "ValidateSettingsLine");
  }
  FamilySettings scratch;
  return ApplyLine(line, "", &scratch);
}

}  // namespace tabletfs::fs
