#define FUSE_USE_VERSION 314
#include "fs/invalidator.h"

#include <fuse_lowlevel.h>

namespace tabletfs::fs {

Invalidator::Invalidator(fuse_session* session)
    : session_(session), thread_([this] { Run(); }) {}

Invalidator::~Invalidator() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
}

void Invalidator::Inode(uint64_t ino) {
  MutexLock lock(&mu_);
  Notice n;
  n.ino = ino;
  queue_.push_back(std::move(n));
  queued_++;
  cv_.SignalAll();
}

void Invalidator::Entry(uint64_t parent, std::string name) {
  MutexLock lock(&mu_);
  Notice n;
  n.ino = parent;
  n.entry = true;
  n.name = std::move(name);
  queue_.push_back(std::move(n));
  queued_++;
  cv_.SignalAll();
}

void Invalidator::Drain() {
  MutexLock lock(&mu_);
  uint64_t target = queued_;
  while (sent_ < target && !stop_) Await();
}

void Invalidator::Run() {
  for (;;) {
    Notice n;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) Await();
      if (queue_.empty()) return;
      n = std::move(queue_.front());
      queue_.pop_front();
    }
    // Errors (ENOENT: the kernel does not know the node) are expected and
    // harmless: there is nothing cached to drop.
    if (n.entry) {
      fuse_lowlevel_notify_inval_entry(session_, n.ino, n.name.data(),
                                       n.name.size());
    } else {
      fuse_lowlevel_notify_inval_inode(session_, n.ino, 0, 0);
    }
    MutexLock lock(&mu_);
    sent_++;
    cv_.SignalAll();
  }
}

}  // namespace tabletfs::fs
