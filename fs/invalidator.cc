#define FUSE_USE_VERSION 314
#include "fs/invalidator.h"

#include <fuse_lowlevel.h>

namespace tabletfs::fs {

Invalidator::Invalidator(fuse_session* session,
                         std::chrono::milliseconds test_delay)
    : session_(session),
      test_delay_(test_delay),
      thread_([this] { Run(); }) {}

Invalidator::~Invalidator() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
}

uint64_t Invalidator::Push(Notice n) {
  MutexLock lock(&mu_);
  queue_.push_back(std::move(n));
  cv_.SignalAll();
  return ++queued_;
}

uint64_t Invalidator::Inode(uint64_t ino) {
  Notice n;
  n.ino = ino;
  return Push(std::move(n));
}

uint64_t Invalidator::Entry(uint64_t parent, std::string name) {
  Notice n;
  n.ino = parent;
  n.entry = true;
  n.name = std::move(name);
  return Push(std::move(n));
}

bool Invalidator::Await(uint64_t ticket, std::chrono::microseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (sent_ < ticket && !stop_) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    AwaitFor(std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - now));
  }
  return true;
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
    if (test_delay_.count() > 0) std::this_thread::sleep_for(test_delay_);
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
