// Clang thread-safety analysis attributes; empty under other compilers.
// See https://clang.llvm.org/docs/ThreadSafetyAnalysis.html.
#ifndef TABLETFS_STORE_UTIL_THREAD_ANNOTATIONS_H_
#define TABLETFS_STORE_UTIL_THREAD_ANNOTATIONS_H_

// Abseil (which gRPC's headers include) defines the same unprefixed names
// for backward compatibility, with other bodies. Its own code uses only the
// ABSL_-prefixed ones: once this header is in, its compatibility header is
// skipped; when it came first, its definitions are replaced by these.
#define ABSL_BASE_INTERNAL_THREAD_ANNOTATIONS_H_
#undef GUARDED_BY
#undef PT_GUARDED_BY
#undef ACQUIRED_BEFORE
#undef ACQUIRED_AFTER
#undef NO_THREAD_SAFETY_ANALYSIS

#if defined(__clang__)
#define TABLETFS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define TABLETFS_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) TABLETFS_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY TABLETFS_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) TABLETFS_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) TABLETFS_THREAD_ANNOTATION_(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) \
  TABLETFS_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) \
  TABLETFS_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define REQUIRES(...) \
  TABLETFS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) \
  TABLETFS_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define RELEASE(...) \
  TABLETFS_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) \
  TABLETFS_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) TABLETFS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) TABLETFS_THREAD_ANNOTATION_(assert_capability(x))
#define RETURN_CAPABILITY(x) TABLETFS_THREAD_ANNOTATION_(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS \
  TABLETFS_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // TABLETFS_STORE_UTIL_THREAD_ANNOTATIONS_H_
