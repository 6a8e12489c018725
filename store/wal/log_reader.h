// LogReader: reads back the records of a commit-log file written by
// LogWriter (format: store/doc/log_format.md), and tells a torn tail (what a
// crash leaves) from damage in the middle of the log (what must never be
// silently skipped).
//
// ReadRecord() outcomes:
//   true,  OK          a record; *record holds its bytes.
//   false, OK          the end: either a clean end, or a torn tail — an
//                      incomplete or damaged last record with no intact record
//                      after it (the file was cut short, or unsynced bytes
//                      were lost or zero-filled by a crash). torn_tail() says
//                      which; LastRecordEndOffset() is where to truncate.
//   false, Corruption  damage followed by an intact later record, an
//                      inconsistent fragment sequence, or an unknown fragment
//                      type. The message names the file and the offset.
//   false, IOError     the SequentialFile failed.
// After returning false, every later call returns false with the same status.
//
// Thread safety: not thread-safe; one thread at a time.
#ifndef TABLETFS_STORE_WAL_LOG_READER_H_
#define TABLETFS_STORE_WAL_LOG_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/status.h"

namespace tabletfs {

class LogReader {
 public:
  // Takes ownership of `file`, positioned at the start of the log.
  // `file_name` is used in error messages only.
  LogReader(std::unique_ptr<SequentialFile> file, std::string file_name);
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;
  ~LogReader();

  // Reads the next record into *record (replacing its contents). See the
  // outcomes above. REQUIRES: record and status are not null.
  bool ReadRecord(std::string* record, Status* status);

  // The file offset just past the last record returned (0 before the first).
  // After a torn tail, recovery truncates the file to this size before a
  // LogWriter appends to it (LogWriter's initial_size).
  uint64_t LastRecordEndOffset() const { return last_record_end_; }

  // True once ReadRecord() returned false with OK after dropping bytes past
  // LastRecordEndOffset() that did not form a complete record (block-trailer
  // padding does not count).
  bool torn_tail() const { return torn_tail_; }
  // True with torn_tail() when every byte after LastRecordEndOffset() was
  // zero: space a mapped log allocated ahead and no record reached
  // (Env::NewLogFile), or pages a power cut lost before they were written.
  bool zero_tail() const { return zero_tail_; }

 private:
  enum class FragmentKind {
    kFragment,   // an intact fragment (its type may still be unknown)
    kEndOfFile,  // no bytes left at a fragment boundary
    kTruncated,  // the file ends inside a fragment header
    kBad,        // checksum mismatch, length past the block or the file,
                 // zero-filled header
    kIOError,
  };
  struct Fragment {
    uint8_t type = 0;
    std::string_view payload;  // valid until the next block is read
    uint64_t offset = 0;       // file offset of the fragment header
    std::string problem;       // kBad: what is wrong
  };

  FragmentKind ReadFragment(Fragment* fragment, Status* io_status);
  // Replaces block_ with the next block of the file. False at EOF (block_
  // empty) or on an I/O error (*io_status not OK).
  bool ReadNextBlock(Status* io_status);
  // After damage at pos_ in block_: looks for an intact fragment that starts
  // a record (kFull or kFirst) anywhere after it. Consumes the file.
  bool FindLaterRecordStart(uint64_t* offset, Status* io_status);
  // True when an intact fragment of type kFull or kFirst starts at `pos` of
  // `block` (a whole block or the file's last, short one).
  static bool IsIntactRecordStart(std::string_view block, size_t pos);

  bool Finish(Status status, Status* out);
  std::string Where(uint64_t offset) const;

  std::unique_ptr<SequentialFile> file_;
  const std::string file_name_;
  std::unique_ptr<char[]> buffer_;
  std::string_view block_;    // the current block (buffer_ or file memory)
  uint64_t block_start_ = 0;  // file offset of block_[0]
  size_t pos_ = 0;            // read position in block_
  bool eof_ = false;          // block_ is the file's last (short) block

  uint64_t last_record_end_ = 0;
  bool torn_tail_ = false;
  bool zero_tail_ = false;
  bool rest_zero_ = false;  // FindLaterRecordStart: all it read was zeros
  bool done_ = false;
  Status final_status_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_WAL_LOG_READER_H_
