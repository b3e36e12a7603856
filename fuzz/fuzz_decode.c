/*
** fuzz_decode.c: arbitrary bytes -> core.decode. Must never raise (only a
** memory error could), crash or hang; a failure must be a well-formed err.
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_State *L = jc_fuzz_state();
  lua_pushlstring(L, (const char *)data, size);
  if (jc_fuzz_call(L, "decode", 1, 2) != LUA_OK)
    jc_fuzz_die("decode raised", L);
  if (lua_isnil(L, -2)) jc_fuzz_check_err(L, -1, size);
  else if (!lua_isnil(L, -1)) jc_fuzz_die("decode: value and err", NULL);
  lua_settop(L, JC_FUZZ_CORE);
  return 0;
}
