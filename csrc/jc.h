/*
** jc.h: types, limits and the error helper shared by the C files of
** jsoncontract.core. Each area file ('parse.c', 'encode.c', 'schema_lua.c',
** 'pattern.c', 'transport.c') exposes one 'jc_<area>_open' that adds its
** functions to the module table; 'core.c' calls them in turn.
*/
#ifndef JC_H
#define JC_H

#include "compat.h"
#include <stddef.h>

#ifndef JC_VERSION
#define JC_VERSION "0.0.0-dev"
#endif

#define JC_EXPORT __attribute__((visibility("default")))

#if defined(__GNUC__)
#define JC_NOINLINE __attribute__((noinline))
#define JC_INLINE __inline__
#define JC_HOT_INLINE __inline__ __attribute__((always_inline))
#else
#define JC_NOINLINE
#define JC_INLINE
#define JC_HOT_INLINE
#endif

/* Registry names. */
#define JC_ERROR_MT "jsoncontract.error"   /* each err's metatable's mt */
#define JC_ARRAY_MT "jsoncontract.array"   /* marks a Lua table as a JSON array */

/* JSON null is the light userdata NULL, as in lua-cjson, so cjson.null and
** jsoncontract.null are the same value. */
#define jc_pushnull(L) lua_pushlightuserdata((L), NULL)
#define jc_isnull(L, i) \
  (lua_type((L), (i)) == LUA_TLIGHTUSERDATA && lua_touserdata((L), (i)) == NULL)

/*
** Errors (error.c). An err is a table whose only raw content is [1] =
** "category/kind: message" (what lua-nginx-module's ngx.say prints of a
** table), with its own metatable: __index and __newindex reach a plain
** table of named fields (category, kind, message, offset, errors, ...),
** __tostring returns [1], __concat joins tostring() of both sides, __pairs
** walks the fields. That metatable's own metatable is the shared
** 'jsoncontract.error' (core.error_mt), which is how an err is known.
**
** jc_error_begin pushes the fields table { category = category, kind =
** kind, message = <fmt> } of a new err; the caller adds further fields
** to it (a plain table: lua_setfield) and then calls jc_error_end, which
** turns the fields table on top into the err (adopting it, not copying)
** and leaves the err in its place. [-0, +1, m] and [-1, +1, m]
** jc_error_fields pushes the fields table of the err at 'idx' and returns
** 1, or pushes nothing and returns 0 when the value is not an err.
** [-0, +(0|1), -]
** jc_error_open registers the shared metatable and sets core.error,
** core.error_fields and core.error_mt in the module table on top.
** [-0, +0, m]
*/
void jc_error_begin(lua_State *L, const char *category, const char *kind,
                    const char *fmt, ...);
void jc_error_end(lua_State *L);
int jc_error_fields(lua_State *L, int idx);
void jc_error_open(lua_State *L);

/* Pointers (RFC 6901), in error.c: jc_add_token adds 's' (len bytes, may
** hold NUL) as one reference token, '~' as "~0" and '/' as "~1";
** jc_add_child_path adds "/<kw>" and then "/<token>" when 'token' is not
** NULL, else "/<index>" when 'index' >= 0. Both only add to 'b'. */
void jc_add_token(luaL_Buffer *b, const char *s, size_t len);
void jc_add_child_path(luaL_Buffer *b, const char *kw, const char *token,
                       size_t toklen, long index);

/*
** Skip a run of plain JSON string bytes (0x20..0x7F other than '"' and
** '\\') eight at a time, for parse.c and encode.c. Returns the first stop
** inside the words read, or the first position within 8 bytes of 'end'
** (the caller finishes byte by byte with its own table). Where the host is
** not a little-endian GNU C target it returns 's' and the caller does it
** all. A byte stops the run when it is '"' or '\\' (its XOR with the
** character is 0), below 0x20, or has the high bit set; each test leaves
** that byte's high bit set. A borrow can mark bytes after the first stop,
** never before it, so the lowest marked byte is the first stop.
*/
#if defined(__GNUC__) && defined(__BYTE_ORDER__) \
    && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#define JC_ONES 0x0101010101010101ULL
static inline const unsigned char *jc_scan_plain8(const unsigned char *s,
                                                  const unsigned char *end) {
  unsigned long long w, m;
#if defined(__SSE2__)
  /* sixteen at a time first (SSE2 is baseline on x86-64): a byte stops the
  ** run when it equals '"' or '\\', or is below 0x20 as a signed byte:
  ** one compare for the controls (0x00-0x1F) and the bytes with the high
  ** bit set (0x80-0xFF, negative) */
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                space = _mm_set1_epi8(0x20);
  while (end - s >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i stop = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
        _mm_cmplt_epi8(v, space));
    int bits = _mm_movemask_epi8(stop);
    if (bits) return s + __builtin_ctz((unsigned)bits);
    s += 16;
  }
#endif
  while (end - s >= 8) {
    memcpy(&w, s, 8);
    m = (((w ^ (JC_ONES * '"')) - JC_ONES) | ((w ^ (JC_ONES * '\\')) - JC_ONES)
         | (w - JC_ONES * 0x20) | w) & (JC_ONES * 0x80);
    if (m) return s + (__builtin_ctzll(m) >> 3);
    s += 8;
  }
  return s;
}
#else
#define jc_scan_plain8(s, end) ((void)(end), (s))
#endif

/*
** Run the C function 'fn' under lua_pcall with the 'nargs' values on top
** of the stack as its arguments and '*busy' set to 1 for the duration,
** then put back the value '*busy' had (a nested call that is allowed,
** e.g. a preview inside a preview, must not clear the outer call's mark).
** The mark is how an object learns that Lua code run by an allocation
** inside 'fn' (a __gc finalizer) is calling it again; the protected call
** is how it is cleared on every exit, also a raise inside 'fn' (a memory
** error, or on Lua 5.1 and LuaJIT an error a finalizer raised). The
** object holding '*busy' must be anchored by the caller (below the
** arguments). Returns lua_pcall's status: 0 with fn's results in place of
** the arguments, else the error value there (the caller cleans up, then
** rethrows it with lua_error). [-nargs, +(results | 1), m]
*/
int jc_pcall_busy(lua_State *L, lua_CFunction fn, int nargs, int *busy);
/* jc_pcall_busy for a function already on the stack below its 'nargs'
** arguments (an upvalue, say: nothing to allocate before the mark).
** [-(nargs + 1), +(results | 1), -] */
int jc_pcall_marked(lua_State *L, int nargs, int *busy);

/* Area entry points: each adds its functions to the table at the top of the
** stack. Stack: [-0, +0, m] */
void jc_parse_open(lua_State *L);
void jc_encode_open(lua_State *L);
void jc_schema_open(lua_State *L);
void jc_transport_open(lua_State *L);
void jc_stream_open(lua_State *L);

#endif
