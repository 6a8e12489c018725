// LogWriter: appends records to a commit-log file in the format of
// store/doc/log_format.md (32 KiB blocks, records split into fragments, each
// fragment checksummed with XXH64).
//
// Durability: AddRecord() only hands bytes to the WritableFile, which may
// buffer them. Flush() makes every added record survive a crash of the
// process; Sync() makes it survive power loss.
//
// Errors are sticky: once an append, flush or sync fails, the file may end
// inside a partial record, so every later call returns that first error.
// The owner must continue in a new log file; the partial record at the end of
// this one reads back as a torn tail (see LogReader).
//
// Thread safety: not thread-safe, but for SyncFlushed(). The engine's write
// queue serializes all other calls.
#ifndef TABLETFS_STORE_WAL_LOG_WRITER_H_
#define TABLETFS_STORE_WAL_LOG_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/status.h"

namespace tabletfs {

class LogWriter {
 public:
  // Takes ownership of `file`. `initial_size` is the length the file already
  // has when appending to an existing log (after recovery truncated it to
  // LogReader::LastRecordEndOffset()); 0 for a new file. Block alignment
  // continues from there.
  explicit LogWriter(std::unique_ptr<WritableFile> file,
                     uint64_t initial_size = 0);
  // As above, and the first successful Sync() also syncs `dir` (the log's
  // directory) through `env`. Use it for a log just created with
  // NewWritableFile: Sync() makes the bytes durable, but not the file's name,
  // so without a SyncDir a power loss can lose the whole file, records
  // reported as synced included. `env` is not owned and must outlive the
  // writer.
  LogWriter(std::unique_ptr<WritableFile> file, uint64_t initial_size, Env* env,
            std::string dir);
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  // Does not close the file; buffered bytes reach the OS only if the
  // WritableFile's destructor writes them. Call Flush() or Sync() first.
  ~LogWriter();

  // Appends one record (any length, including 0). The record reads back
  // whole or not at all.
  Status AddRecord(std::string_view payload) {
    return AddRecord(std::span<const std::string_view>(&payload, 1));
  }
  // The same for the record that is `pieces` one after another (a large
  // value is not copied into a contiguous record first).
  Status AddRecord(std::span<const std::string_view> pieces);
  // Hands every added record to the OS.
  Status Flush();
  // Makes every added record durable (the file's name too, when constructed
  // with a directory to sync).
  Status Sync();
  // Makes the records that Flush() or Sync() handed to the OS durable
  // (WritableFile::SyncFlushed). The one call that may run on another
  // thread while the owner appends and flushes, not while it closes or
  // destroys the writer; it does not sync the directory. A failure is not
  // sticky here (the file's next Sync() fails): the caller must stop
  // trusting the log. NotSupported when the file cannot.
  Status SyncFlushed();
  // Closes the file (after a Flush). Later calls fail.
  Status Close();

  // Bytes in the file so far, including `initial_size` and block trailers:
  // the offset where the next record starts (or its block trailer).
  uint64_t size() const { return size_; }

 private:
  // Emits the next `n` bytes of the pieces from (*piece, *offset) on as one
  // fragment, advancing the position.
  Status EmitFragment(uint8_t type, std::span<const std::string_view> pieces,
                      size_t* piece, size_t* offset, size_t n);
  Status Fail(Status status);

  std::unique_ptr<WritableFile> file_;
  uint64_t size_;
  size_t block_offset_;   // position inside the current block
  Status error_;          // sticky; OK while healthy
  std::string fragment_;  // reused buffer: header + payload of one fragment
  bool closed_ = false;
  Env* const env_ = nullptr;  // With dir_: SyncDir on the first Sync().
  const std::string dir_;
  bool dir_synced_ = true;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_WAL_LOG_WRITER_H_
