// Value files: append-only files holding large values (at least
// Options::large_value_bytes) outside the SSTables, so compaction moves a
// small ValueRef instead of rewriting the value, and reads bypass the block
// cache. Format: store/doc/value_file_format.md.
//
// Durability contract: a ValueRef may be written to the commit log (or to an
// SSTable) only after ValueFileWriter::Sync() returned OK for the Add() that
// produced it. Otherwise power loss could keep the log record but lose the
// value it points to. The first Sync() also syncs the parent directory, so
// the new file's name is durable too.
//
// Value files are never reopened for appending: after a crash or a write
// error the engine starts a new file number. Bytes after the last synced
// entry of an old file may be torn; no ValueRef points at them.
//
// Thread safety: a ValueFileWriter is used by one thread at a time (the
// engine's write queue). A ValueFileReader is immutable after Open() and
// safe for concurrent Read(). ValueRef is a plain value.
#ifndef TABLETFS_STORE_WAL_VALUE_FILE_H_
#define TABLETFS_STORE_WAL_VALUE_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/status.h"

namespace tabletfs {

// File header and entry header sizes (see the format doc).
inline constexpr size_t kValueFileHeaderSize = 32;
inline constexpr size_t kValueEntryHeaderSize = 24;
// File header flag: appended to at commit (the engine's log value file), so
// the file may end in an entry that a crash or a failed append cut short
// and that no reference points at; ScanValueFile stops there.
inline constexpr uint32_t kValueFileMayEndTorn = 1;

// Where one value lives. Stored in SSTables in its encoded form.
struct ValueRef {
  uint64_t file_number = 0;
  // File offset of the value's first byte (just past its entry header).
  uint64_t offset = 0;
  uint64_t size = 0;
  // XXH64 (seed 0) of the value bytes.
  uint64_t checksum = 0;

  // Appends the encoding (version byte 1, three varint64s, fixed64
  // checksum; at most 39 bytes).
  void EncodeTo(std::string* dst) const;
  // Parses exactly one encoding that fills `input`; Corruption otherwise.
  static Result<ValueRef> DecodeFrom(std::string_view input);

  bool operator==(const ValueRef&) const = default;
};

class ValueFileWriter {
 public:
  // Creates (truncating) the file at `path` and writes its header, which
  // records `file_number` and `flags` (0 or kValueFileMayEndTorn). Nothing
  // is durable until Sync().
  static Result<std::unique_ptr<ValueFileWriter>> Create(Env* env,
                                                         std::string path,
                                                         uint64_t file_number,
                                                         uint32_t flags = 0);

  ValueFileWriter(const ValueFileWriter&) = delete;
  ValueFileWriter& operator=(const ValueFileWriter&) = delete;
  // Closes the file if Close() was not called (errors are dropped).
  ~ValueFileWriter();

  // Appends one value and returns where it lives. The ref is usable by
  // readers at once and durable after the next successful Sync().
  Result<ValueRef> Add(std::string_view value);
  // Hands appended values to the OS (survives a crash of the process).
  Status Flush();
  // Makes every added value durable; the first call also syncs the parent
  // directory.
  Status Sync();
  // Makes the values earlier Flush() calls handed to the OS durable, beside
  // a thread that keeps adding (WritableFile::SyncFlushed; NotSupported by
  // files that cannot). Syncs no directory: call Sync() once first.
  Status SyncFlushed() { return file_->SyncFlushed(); }
  Status Close();

  // Bytes in the file, header included.
  uint64_t size() const { return size_; }
  uint64_t file_number() const { return file_number_; }
  const std::string& path() const { return path_; }

 private:
  ValueFileWriter(Env* env, std::string path, uint64_t file_number,
                  std::unique_ptr<WritableFile> file);
  Status Fail(Status status);

  Env* const env_;
  const std::string path_;
  const uint64_t file_number_;
  std::unique_ptr<WritableFile> file_;
  uint64_t size_ = 0;
  bool dir_synced_ = false;
  bool closed_ = false;
  // Sticky: after a failed append the file may end in a partial entry.
  Status error_;
};

class ValueFileReader {
 public:
  // Opens the file and checks its header (magic, version, checksum).
  static Result<std::unique_ptr<ValueFileReader>> Open(Env* env,
                                                       std::string path);

  ValueFileReader(const ValueFileReader&) = delete;
  ValueFileReader& operator=(const ValueFileReader&) = delete;
  ~ValueFileReader();

  // Reads the value `ref` names and verifies its entry header and checksum.
  // InvalidArgument when ref.file_number is not this file's; Corruption
  // naming the file and offset on any mismatch or a file cut short.
  Result<std::string> Read(const ValueRef& ref) const;

  uint64_t file_number() const { return file_number_; }
  const std::string& path() const { return path_; }
  // The file's size when it was opened: a file still being written may
  // have grown since, and this reader reads nothing past it.
  uint64_t size() const { return size_; }

 private:
  ValueFileReader(std::string path, uint64_t file_number, uint64_t size,
                  std::unique_ptr<RandomAccessFile> file);

  const std::string path_;
  const uint64_t file_number_;
  const uint64_t size_;
  const std::unique_ptr<RandomAccessFile> file_;
};

// Reads a whole value file on its own, as the `check` tool does: header,
// then every entry's header checksum, length and value checksum. Calls `fn`
// (when set) with the ref of each intact entry, in file order. Corruption
// naming the file and offset at the first problem, including a file that
// ends inside an entry ("truncated"), unless its header has
// kValueFileMayEndTorn: then such an end, or an entry header of zeros,
// ends the scan.
Status ScanValueFile(Env* env, const std::string& path,
                     const std::function<void(const ValueRef&)>& fn);
// ScanValueFile without a callback.
Status VerifyValueFile(Env* env, const std::string& path);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_WAL_VALUE_FILE_H_
