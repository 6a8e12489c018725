// libFuzzer target for the schema parsers: GcPolicy::Parse and the duration
// syntax (store/schema.h), and the `.schema/TABLE/FAMILY` text
// (fs/schema_text.h).
//
// Properties, for any input text:
//   - GcPolicy::Parse never crashes; when it accepts, Parse(ToString()) is
//     the same policy and ToString() is a fixed point.
//   - ParseDurationMicros, when it accepts, reads FormatDurationMicros back.
//   - ParseFamilySettings accepts exactly when every line passes
//     ValidateSettingsLine; when it accepts, owner and mode come from
//     `current` and FormatFamilySettings(out) parses back to out; when it
//     refuses, *out is unchanged and the reason names a line.
#include <cerrno>
#include <cstdint>
#include <string>

#include "fs/schema_text.h"
#include "store/schema.h"
#include "tests/fuzz/fuzz_util.h"

namespace tabletfs::fuzz {
namespace {

void CheckGcPolicy(std::string_view text) {
  Result<GcPolicy> policy = GcPolicy::Parse(text);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().IsInvalidArgument(), "Parse: %s",
               policy.status().ToString().c_str());
    return;
  }
  std::string canonical = policy->ToString();
  Result<GcPolicy> again = GcPolicy::Parse(canonical);
  FUZZ_CHECK(again.ok(), "Parse(ToString()) refused '%s': %s",
             canonical.c_str(), again.status().ToString().c_str());
  FUZZ_CHECK(*again == *policy, "Parse(ToString()) != policy for '%s'",
             canonical.c_str());
  FUZZ_CHECK(again->ToString() == canonical,
             "ToString not a fixed point: "
             "'%s' -> '%s'",
             canonical.c_str(), again->ToString().c_str());
  // Evaluation never crashes, whatever the rank and age.
  (void)policy->Collects(0, 0);
  (void)policy->Collects(UINT64_MAX, INT64_MAX);
  (void)policy->Collects(3, -1);
  (void)policy->DependsOnTime();
}

void CheckDuration(std::string_view text) {
  Result<int64_t> d = ParseDurationMicros(text);
  if (!d.ok()) return;
  std::string formatted = FormatDurationMicros(*d);
  Result<int64_t> back = ParseDurationMicros(formatted);
  FUZZ_CHECK(back.ok() && *back == *d,
             "duration %lld formats as '%s', which "
             "does not parse back",
             static_cast<long long>(*d), formatted.c_str());
}

void CheckSettingsText(std::string_view text) {
  FamilySettings current;
  current.gc_policy = GcPolicy::MaxVersions(7);
  current.compression = Compression::kNone;
  current.owner_uid = 1234;
  current.owner_gid = 5678;
  current.mode = 0600;
  FamilySettings sentinel;
  sentinel.owner_uid = 42;
  FamilySettings out = sentinel;
  fs::FsError e = fs::ParseFamilySettings(text, current, &out);

  bool every_line_valid = true;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (!fs::ValidateSettingsLine(line).ok()) every_line_valid = false;
    rest =
        nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  FUZZ_CHECK(e.ok() == every_line_valid,
             "ParseFamilySettings %s but ValidateSettingsLine says %s",
             e.ok() ? "accepts" : "refuses",
             every_line_valid ? "every line is valid" : "a line is bad");

  if (!e.ok()) {
    FUZZ_CHECK(e.err == EINVAL, "unexpected %s", e.ToString().c_str());
    FUZZ_CHECK(e.reason.rfind("line ", 0) == 0, "reason names no line: %s",
               e.reason.c_str());
    FUZZ_CHECK(out == sentinel, "*out changed on error");
    return;
  }
  FUZZ_CHECK(out.owner_uid == current.owner_uid &&
                 out.owner_gid == current.owner_gid && out.mode == current.mode,
             "owner or mode taken from the text");
  std::string formatted = fs::FormatFamilySettings(out);
  FamilySettings back;
  FUZZ_CHECK(fs::ParseFamilySettings(formatted, current, &back).ok(),
             "FormatFamilySettings output refused: '%s'", formatted.c_str());
  FUZZ_CHECK(back == out, "FormatFamilySettings does not round-trip: '%s'",
             formatted.c_str());
  // Aliasing out and current is allowed.
  FamilySettings aliased = current;
  FUZZ_CHECK(
      fs::ParseFamilySettings(text, aliased, &aliased).ok() && aliased == out,
      "aliased parse differs");
}

}  // namespace
}  // namespace tabletfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tabletfs::fuzz::CheckGcPolicy(text);
  tabletfs::fuzz::CheckDuration(text);
  tabletfs::fuzz::CheckSettingsText(text);
  return 0;
}
