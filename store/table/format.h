// The on-disk framing of an SSTable (see store/doc/table_format.md): block
// handles, index entries, the per-block trailer (compression type +
// checksum: XXH64 in format 1, XXH3 from format 2), the fixed-size footer,
// and ReadBlock(), which verifies and decompresses one block.
//
// Thread safety: plain values and pure functions; ReadBlock() may be called
// concurrently on one RandomAccessFile.
#ifndef TABLETFS_STORE_TABLE_FORMAT_H_
#define TABLETFS_STORE_TABLE_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/schema.h"
#include "store/status.h"

namespace tabletfs {

// The compression of one stored block, written in its trailer.
// Persisted in every SSTable: never renumber, only append.
enum class BlockType : uint8_t { kRaw = 0, kLz4 = 1 };

// Where a block lives: its offset in the file and the size of its stored
// contents, without the 9-byte trailer.
struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;

  // Varint64 offset, varint64 size (at most 20 bytes): the index block
  // values.
  void EncodeTo(std::string *dst) const;
  // Parses a handle from the front of *input and advances it.
  bool DecodeFrom(std::string_view *input);
};

// An index entry's value: the data block's handle and the offset of its
// group, the run of consecutive blocks the block cache keeps and a scan
// steps by as one unit (TableOptions::group_size). Encoded as the handle,
// then the varint64 distance back from the block to its group's first
// block, left out when 0: a group's first block (and every block of a
// table written before groups) has the plain handle as its value, and a
// reader that knows no groups reads the handle and ignores the rest.
struct IndexEntry {
  BlockHandle handle;
  uint64_t group = 0;  // file offset of the group's first block

  void EncodeTo(std::string *dst) const;
  // Parses the whole of `input`; false if it is not a handle optionally
  // followed by a distance back no larger than the block's offset.
  bool DecodeFrom(std::string_view input);
};

// The most data blocks in one group: a writer cuts a group at this many
// blocks whatever their size, and a reader keeps no more per group.
inline constexpr size_t kMaxBlocksPerGroup = 16;

// 1 byte BlockType + 8 bytes fixed64 checksum (seed 0) of contents + type
// byte: XXH64 in format 1, XXH3_64bits in formats 2 and 3.
inline constexpr size_t kBlockTrailerSize = 9;

// The last bytes of every SSTable.
//   fixed64 index offset, fixed64 index size,
//   fixed64 filter offset, fixed64 filter size (0: no filter),
//   fixed32 format version, fixed64 XXH64 of the preceding 36 bytes,
//   8 bytes magic "tabletfs".
struct Footer {
  BlockHandle index;
  BlockHandle filter;
  uint32_t format_version = 0;

  static constexpr size_t kEncodedLength = 52;
  // Format versions, persisted in the footer (never reuse a number):
  //   1: XXH64 block checksums, a whole-table Bloom filter;
  //   2: XXH3 block checksums, a cache-line-blocked Bloom filter;
  //   3: as 2, and index values name each block's group (IndexEntry).
  // Readers open both; writers write kCurrentVersion unless a test asks
  // for an older one (TableOptions::format_version).
  static constexpr uint32_t kOldestVersion = 1;
  static constexpr uint32_t kCurrentVersion = 3;
  static constexpr std::string_view kMagic = "tabletfs";

  void EncodeTo(std::string *dst) const;
  // Checks, in order: the magic, the footer checksum (XXH64 in every
  // version, so a damaged version field reads as damage), the format
  // version (NotSupported naming it when unknown). `file_name` and
  // `offset` (of the footer in the file) go into error messages.
  Status DecodeFrom(std::string_view input, std::string_view file_name,
                    uint64_t offset);
};

// The checksum of a block trailer in `format_version` (XXH64 for 1, XXH3
// from 2) of `data`, the stored contents and the type byte.
// REQUIRES: a version Footer::DecodeFrom accepts.
uint64_t BlockChecksum(uint32_t format_version, std::string_view data);

// Appends `contents` to *out as a stored block (compressed with lz4 when
// `compression` asks for it and lz4 saves at least 1/8) plus its trailer,
// checksummed as `format_version` says. Returns the BlockType used.
BlockType EncodeBlock(std::string_view contents, Compression compression,
                      uint32_t format_version, std::string *out);

// A buffer for a decoded block, allocated without being zeroed (every byte
// is written by the read or the decompression). Buffers of up to 16 KiB,
// in classes 256 bytes apart, come from the allocating thread's own cache
// of freed buffers (up to 256 KiB of them), and a freed one goes to the
// freeing thread's cache while it has room. A point read that misses the
// block cache decodes a block into one, and the insertion that follows
// evicts another, which the next miss on the thread takes: no malloc or
// free per miss, and no free of one thread's chunk by another, which
// takes the first thread's malloc arena lock (glibc). Under ASan a cached
// buffer is poisoned until it is handed out again, and then only the bytes
// asked for are addressable, not the rest of its class.
//
// Thread safety: a buffer is one thread's at a time; the caches are per
// thread.
class BlockBuffer {
 public:
  BlockBuffer() = default;
  explicit BlockBuffer(size_t bytes);
  BlockBuffer(BlockBuffer &&other) noexcept
      : data_(other.data_), capacity_(other.capacity_), cached_(other.cached_) {
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  BlockBuffer &operator=(BlockBuffer &&other) noexcept;
  BlockBuffer(const BlockBuffer &) = delete;
  BlockBuffer &operator=(const BlockBuffer &) = delete;
  ~BlockBuffer() { Release(); }

  char *get() const { return data_; }
  // Bytes the buffer holds: what was asked for, rounded up to its class.
  size_t capacity() const { return capacity_; }

  // Bytes of freed buffers the calling thread's cache holds.
  static size_t ThreadCachedBytes();

 private:
  void Release();

  char *data_ = nullptr;
  size_t capacity_ = 0;
  bool cached_ = false;  // goes back to a thread's cache (a class's size)
};

// The decoded bytes of one block, in a buffer of its own.
struct BlockContents {
  BlockBuffer data;
  size_t size = 0;

  std::string_view view() const { return {data.get(), size}; }
};

// "<file>: block at offset N", the context of every message about a block.
std::string BlockContext(std::string_view file_name, uint64_t offset);

// Reads the block at `handle` of a table in `format_version`, verifies its
// checksum and decompresses it. Corruption names the file and the block offset:
// "<file>: block at offset N: checksum mismatch". A file that returns its
// bytes in place (a mapped file) costs no copy of a compressed block, and
// one copy of a raw one.
Result<BlockContents> ReadBlockContents(const RandomAccessFile &file,
                                        std::string_view file_name,
                                        const BlockHandle &handle,
                                        uint32_t format_version);
// The same, as a string (the filter block, tests).
Result<std::string> ReadBlock(const RandomAccessFile &file,
                              std::string_view file_name,
                              const BlockHandle &handle,
                              uint32_t format_version);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_FORMAT_H_
