/*
** fuzz_stream.c: the first byte picks the chunk sizes, the rest is the
** text. Feed it to core.stream_new() in those chunks with a preview after
** some of them (and after the last): nothing may raise, every preview value must encode, and finish()
** must give what core.decode gives for the whole text (same encoding, or
** same kind and offset).
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_State *L = jc_fuzz_state();
  unsigned seed;
  size_t at = 1, n, chunk = 0;
  if (size == 0) return 0;
  seed = data[0];
  lua_createtable(L, 0, 1);                      /* 2: opts */
  lua_pushinteger(L, 64);
  lua_setfield(L, -2, "max_depth");
  lua_pushvalue(L, 2);
  if (jc_fuzz_call(L, "stream_new", 1, 1) != LUA_OK)
    jc_fuzz_die("stream_new raised", L);         /* 3: reader */
  while (at < size) {
    seed = seed * 1103515245u + 12345u;
    n = 1 + (seed >> 16) % 7;
    if (n > size - at) n = size - at;
    lua_getfield(L, 3, "feed");
    lua_pushvalue(L, 3);
    lua_pushlstring(L, (const char *)data + at, n);
    if (lua_pcall(L, 2, 2, 0) != LUA_OK) jc_fuzz_die("feed raised", L);
    if (!lua_toboolean(L, -2)) jc_fuzz_die("feed failed", NULL);
    lua_settop(L, 3);
    at += n;
    /* previews cost the text so far: about 64 per input, and the last */
    if (at < size && ++chunk % (1 + size / 256) != 0) continue;
    lua_getfield(L, 3, "preview");
    lua_pushvalue(L, 3);
    if (lua_pcall(L, 1, 2, 0) != LUA_OK) jc_fuzz_die("preview raised", L);
    if (!lua_istable(L, -1)) jc_fuzz_die("preview: no meta table", NULL);
    if (!lua_isnil(L, -2)) {
      lua_pop(L, 1);
      if (jc_fuzz_call(L, "encode", 1, 1) != LUA_OK)
        jc_fuzz_die("encode of a preview raised", L);
    }
    lua_settop(L, 3);
  }
  lua_getfield(L, 3, "finish");
  lua_pushvalue(L, 3);
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) jc_fuzz_die("finish raised", L);
  /* 4, 5: finish's value, err */
  lua_pushlstring(L, (const char *)data + 1, size - 1);
  lua_pushvalue(L, 2);
  if (jc_fuzz_call(L, "decode", 2, 2) != LUA_OK)
    jc_fuzz_die("decode raised", L);             /* 6, 7: decode's */
  if (lua_isnil(L, 4) != lua_isnil(L, 6))
    jc_fuzz_die("finish and decode disagree on acceptance", NULL);
  if (lua_isnil(L, 4)) {
    lua_getfield(L, 5, "offset");
    lua_getfield(L, 7, "offset");
    lua_getfield(L, 5, "kind");
    lua_getfield(L, 7, "kind");
    if (!lua_rawequal(L, -1, -2) || !lua_rawequal(L, -3, -4))
      jc_fuzz_die("finish and decode disagree on the error", NULL);
  } else {
    const char *a, *b;
    size_t na, nb;
    lua_pushvalue(L, 4);
    if (jc_fuzz_call(L, "encode", 1, 1) != LUA_OK) jc_fuzz_die("encode", L);
    lua_pushvalue(L, 6);
    if (jc_fuzz_call(L, "encode", 1, 1) != LUA_OK) jc_fuzz_die("encode", L);
    a = lua_tolstring(L, -2, &na);
    b = lua_tolstring(L, -1, &nb);
    if (na != nb || memcmp(a, b, na) != 0)
      jc_fuzz_die("finish and decode give different values", NULL);
  }
  lua_settop(L, JC_FUZZ_CORE);
  /* free this input's garbage now: libFuzzer runs a (slow) leak scan after
  ** every input that allocated more than it freed */
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
