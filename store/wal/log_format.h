// Constants of the commit-log format shared by LogWriter and LogReader.
// The format itself is specified in store/doc/log_format.md.
//
// Thread safety: constants only.
#ifndef TABLETFS_STORE_WAL_LOG_FORMAT_H_
#define TABLETFS_STORE_WAL_LOG_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace tabletfs {

// Persisted in every fragment header: never renumber.
enum class LogFragmentType : uint8_t {
  // Reserved: what a zero-filled (preallocated) region decodes to. Never
  // written.
  kZero = 0,
  // The whole record in one fragment.
  kFull = 1,
  // The first, an inner, and the last fragment of a record that spans
  // blocks.
  kFirst = 2,
  kMiddle = 3,
  kLast = 4,
};
inline constexpr uint8_t kMaxLogFragmentType = 4;

// Fragments never cross a block boundary.
inline constexpr size_t kLogBlockSize = 32 * 1024;

// checksum (8, fixed64) | length (2, fixed16) | type (1).
inline constexpr size_t kLogChecksumSize = 8;
inline constexpr size_t kLogHeaderSize = kLogChecksumSize + 2 + 1;

// Largest fragment payload: a block minus one header.
inline constexpr size_t kLogMaxFragmentPayload = kLogBlockSize - kLogHeaderSize;

}  // namespace tabletfs

#endif  // TABLETFS_STORE_WAL_LOG_FORMAT_H_
