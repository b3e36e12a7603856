/*
** fuzz_roundtrip.c: decode -> encode -> decode -> encode. Whatever decode
** accepts must encode without raising; the encoded text must decode again,
** and encoding that second value must give the same text (encode sorts
** keys, so equal values give equal text).
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_State *L = jc_fuzz_state();
  size_t n1, n2;
  const char *t1, *t2;
  lua_pushlstring(L, (const char *)data, size);
  if (jc_fuzz_call(L, "decode", 1, 2) != LUA_OK)
    jc_fuzz_die("decode raised", L);
  if (lua_isnil(L, -2)) {
    jc_fuzz_check_err(L, -1, size);
    lua_settop(L, JC_FUZZ_CORE);
    return 0;
  }
  lua_pop(L, 1);                                 /* value at 2 */
  lua_pushvalue(L, 2);
  if (jc_fuzz_call(L, "encode", 1, 1) != LUA_OK)
    jc_fuzz_die("encode of a decoded value raised", L);
  t1 = lua_tolstring(L, 3, &n1);                 /* text 1 at 3 */
  if (t1 == NULL) jc_fuzz_die("encode returned no string", NULL);
  lua_pushvalue(L, 3);
  if (jc_fuzz_call(L, "decode", 1, 2) != LUA_OK)
    jc_fuzz_die("second decode raised", L);
  if (lua_isnil(L, -2)) {
    lua_getfield(L, -1, "message");
    fprintf(stderr, "text: %.*s\n", (int)(n1 > 2000 ? 2000 : n1), t1);
    jc_fuzz_die("encoded text does not decode", L);
  }
  lua_pop(L, 1);                                 /* value 2 at 4 */
  if (jc_fuzz_call(L, "encode", 1, 1) != LUA_OK)
    jc_fuzz_die("second encode raised", L);
  t2 = lua_tolstring(L, -1, &n2);
  if (t2 == NULL || n1 != n2 || memcmp(t1, t2, n1) != 0)
    jc_fuzz_die("decode(encode(v)) encodes differently", NULL);
  lua_settop(L, JC_FUZZ_CORE);
  return 0;
}
