// libFuzzer target for the manifest record decoder, VersionEdit::DecodeFrom
// (store/db/version_edit.h): any bytes as one manifest record. It must
// return OK or Corruption naming the file, never crash; an accepted edit
// must encode and decode back to the same encoding (what the engine writes
// when it rewrites the manifest).
#include <cstdint>
#include <string>

#include "store/db/version_edit.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tabletfs::VersionEdit;
  std::string_view record(reinterpret_cast<const char*>(data), size);
  VersionEdit edit;
  tabletfs::Status s = edit.DecodeFrom(record, "MANIFEST-fuzz");
  if (!s.ok()) {
    FUZZ_CHECK(s.IsCorruption(), "DecodeFrom: %s", s.ToString().c_str());
    FUZZ_CHECK(s.ToString().find("MANIFEST-fuzz") != std::string::npos,
               "error without the file name: %s", s.ToString().c_str());
    return 0;
  }
  std::string encoded;
  edit.EncodeTo(&encoded);
  VersionEdit again;
  tabletfs::Status s2 = again.DecodeFrom(encoded, "MANIFEST-fuzz");
  FUZZ_CHECK(s2.ok(), "re-encoded edit refused: %s", s2.ToString().c_str());
  std::string encoded2;
  again.EncodeTo(&encoded2);
  FUZZ_CHECK(encoded == encoded2, "encode(decode(encode(edit))) differs");
  return 0;
}
