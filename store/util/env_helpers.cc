// The default WritableFile::SyncFlushed and Env::GetDiskSize, and
// WriteStringToFile and ReadFileToString (declared in store/env.h).

#include <memory>
#include <string>
#include <string_view>

#include "store/env.h"

namespace tabletfs {

Status WritableFile::SyncFlushed() {
  return Status::NotSupported("this file cannot sync while being written");
}

Result<uint64_t> Env::GetDiskSize(const std::string& path) {
  return Status::NotSupported("filesystem size unknown", path);
}

Status WriteStringToFile(Env* env, std::string_view data,
                         const std::string& path, bool sync) {
  auto file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  Status s = (*file)->Append(data);
  if (s.ok() && sync) s = (*file)->Sync();
  // Close even after a failure, so the descriptor is not held until the
  // object dies, but report the first error.
  Status close = (*file)->Close();
  if (s.ok()) s = close;
  if (!s.ok()) {
    // A partial file must not be mistaken for a complete one later (a
    // CURRENT or a manifest written halfway).
    file->reset();
    env->RemoveFile(path).IgnoreError();
  }
  return s;
}

Result<std::string> ReadFileToString(Env* env, const std::string& path) {
  auto file = env->NewSequentialFile(path);
  if (!file.ok()) return file.status();
  constexpr size_t kChunk = 64 << 10;
  auto scratch = std::make_unique<char[]>(kChunk);
  std::string data;
  for (;;) {
    std::string_view fragment;
    Status s = (*file)->Read(kChunk, &fragment, scratch.get());
    if (!s.ok()) return s;
    if (fragment.empty()) break;
    data.append(fragment);
  }
  return data;
}

}  // namespace tabletfs
