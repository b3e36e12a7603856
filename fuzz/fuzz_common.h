/*
** fuzz_common.h: one lua_State per fuzzing process with jsoncontract.core
** loaded (the real module, linked statically into the target), and the
** helpers the targets share. Not part of the library; see fuzz/run.sh.
*/
#ifndef JC_FUZZ_COMMON_H
#define JC_FUZZ_COMMON_H

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int luaopen_jsoncontract_core(lua_State *L);

#define JC_FUZZ_CORE 1          /* stack slot of the module table */

/* The process-wide state, created on first use; the module table sits at
** stack slot 1 for the life of the process. */
static lua_State *jc_fuzz_state(void) {
  static lua_State *L = NULL;
  if (L == NULL) {
    L = luaL_newstate();
    if (L == NULL) abort();
    luaL_openlibs(L);
    lua_pushcfunction(L, luaopen_jsoncontract_core);
    lua_call(L, 0, 1);
  }
  lua_settop(L, JC_FUZZ_CORE);
  return L;
}

/* Report a broken invariant and crash, so libFuzzer saves the input. */
static void jc_fuzz_die(const char *what, lua_State *L) {
  fprintf(stderr, "jsoncontract fuzz: %s", what);
  if (L != NULL && lua_type(L, -1) == LUA_TSTRING)
    fprintf(stderr, ": %s", lua_tostring(L, -1));
  fputc('\n', stderr);
  abort();
}

/* Call core.<fn> on the 'nargs' values on top under lua_pcall, leaving
** 'nres' results. Returns the pcall status. */
static int jc_fuzz_call(lua_State *L, const char *fn, int nargs, int nres) {
  lua_getfield(L, JC_FUZZ_CORE, fn);
  lua_insert(L, -nargs - 1);
  return lua_pcall(L, nargs, nres, 0);
}

/* Check the shape of a decode failure: err table with category "format",
** a string kind and an integer offset within the text. Pops nothing. */
static void jc_fuzz_check_err(lua_State *L, int idx, size_t len) {
  lua_Integer off;
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx)) jc_fuzz_die("decode: err is not a table", L);
  lua_getfield(L, idx, "category");
  if (lua_type(L, -1) != LUA_TSTRING
      || strcmp(lua_tostring(L, -1), "format") != 0)
    jc_fuzz_die("decode: err.category is not \"format\"", NULL);
  lua_getfield(L, idx, "kind");
  if (lua_type(L, -1) != LUA_TSTRING)
    jc_fuzz_die("decode: err.kind is not a string", NULL);
  lua_getfield(L, idx, "offset");
  if (!lua_isinteger(L, -1)) jc_fuzz_die("decode: err.offset missing", NULL);
  off = lua_tointeger(L, -1);
  if (off < 0 || (size_t)off > len)
    jc_fuzz_die("decode: err.offset outside the text", NULL);
  lua_pop(L, 3);
}

#endif
