/*
** Preloaded by spec/ffi_nomem_spec.lua only: anonymous mappings (mmap,
** mremap) larger than JC_TEST_FAIL_OVER bytes fail, as when memory runs
** out. LuaJIT's allocator takes large blocks this way, so a tape that grows
** past the limit meets an allocation failure inside the parser, while the
** small blocks of the rest of the process are served as usual.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>

typedef void *(*jc_mmap_fn)(void *, size_t, int, int, int, off_t);
typedef void *(*jc_mremap_fn)(void *, size_t, size_t, int, ...);

static size_t jc_limit(void) {
  static size_t over = (size_t)-1;
  if (over == (size_t)-1) {
    const char *e = getenv("JC_TEST_FAIL_OVER");
    over = e != NULL ? (size_t)strtoul(e, NULL, 10) : 0;
  }
  return over;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  static jc_mmap_fn real;
  size_t over = jc_limit();
  if (real == NULL) *(void **)&real = dlsym(RTLD_NEXT, "mmap");
  if (over != 0 && len > over && (flags & MAP_ANONYMOUS)) return MAP_FAILED;
  return real(addr, len, prot, flags, fd, off);
}

/* (LuaJIT may be built with 64-bit file offsets: then it calls this name) */
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

void *mremap(void *old, size_t old_len, size_t len, int flags, ...) {
  static jc_mremap_fn real;
  void *to = NULL;
  size_t over = jc_limit();
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    to = va_arg(ap, void *);
    va_end(ap);
  }
  if (real == NULL) *(void **)&real = dlsym(RTLD_NEXT, "mremap");
  if (over != 0 && len > over) return MAP_FAILED;
  return real(old, old_len, len, flags, to);
}
