/*
** copy.c: core.copy, the deep copy the rules gate hands each rule (see
** lua/jsoncontract/contract/rules.lua). It is made once per rule for every
** checked reply, so it is in C: each table is created at its final size in
** one call, where a copy in Lua grows it key by key (a rehash at every power
** of two).
*/
#include "jc.h"

/* Tables within tables, then an error: as deep as the parser may be asked
** to go (max_depth 3000), so a value read from text is always copied. Each
** level holds 4 Lua stack slots; PUC Lua 5.1 and LuaJIT grant a C function
** 8,000, so there the copy stops near 2,000 levels, with the same error. */
#define JC_COPY_MAX_DEPTH 3000
#define JC_COPY_TOO_DEEP "the value is nested too deep to copy for the rules"

/* Push the copy of the value at absolute index 'idx'. 'seen' maps each
** table met to its copy; 'amt' is core.array_mt. Recursion is bounded by
** JC_COPY_MAX_DEPTH. [-0, +1, e] */
static void jc_copy_value(lua_State *L, int idx, int seen, int amt,
                          int depth) {
  int out;
  size_t n_arr, n_all = 0;
  if (lua_type(L, idx) != LUA_TTABLE) {
    lua_pushvalue(L, idx);
    return;
  }
  lua_pushvalue(L, idx);
  lua_rawget(L, seen);
  if (!lua_isnil(L, -1)) return;      /* shared or a cycle: one copy */
  lua_pop(L, 1);
  if (depth > JC_COPY_MAX_DEPTH || !lua_checkstack(L, 8))
    luaL_error(L, JC_COPY_TOO_DEEP);
  n_arr = jc_rawlen(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {     /* the size, so no table regrows */
    n_all++;
    lua_pop(L, 1);
  }
  if (n_arr > n_all) n_arr = n_all;   /* sizes are hints: kept in int */
  lua_createtable(L, n_arr < 0x7fffffff ? (int)n_arr : 0,
                  n_all - n_arr < 0x7fffffff ? (int)(n_all - n_arr) : 0);
  out = lua_gettop(L);
  lua_pushvalue(L, idx);
  lua_pushvalue(L, out);
  lua_rawset(L, seen);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {     /* key, value */
    int k = lua_gettop(L) - 1;
    jc_copy_value(L, k, seen, amt, depth + 1);
    jc_copy_value(L, k + 1, seen, amt, depth + 1);
    lua_rawset(L, out);
    lua_pop(L, 1);
  }
  /* the metatable as getmetatable() shows it (its __metatable field when
  ** it has one): the array marker is shared, another table (a per-object
  ** key order) is copied, anything else is left off */
  if (lua_getmetatable(L, idx)) {
    lua_pushliteral(L, "__metatable");
    lua_rawget(L, -2);
    if (!lua_isnil(L, -1)) lua_remove(L, -2);
    else lua_pop(L, 1);
    if (lua_rawequal(L, -1, amt)) {
      lua_setmetatable(L, out);
    } else if (lua_type(L, -1) == LUA_TTABLE) {
      jc_copy_value(L, lua_gettop(L), seen, amt, depth + 1);
      lua_setmetatable(L, out);
      lua_pop(L, 1);
    } else {
      lua_pop(L, 1);
    }
  }
}

#define JC_COPY_SEEN_KEEP 1024   /* a larger 'seen' table is not kept */

/*
** core.copy(v) -> copy
** A deep copy of 'v': tables (keys too) and their metatables; any other
** value is itself. A table met twice (shared, or a cycle) is copied once,
** so the copy has the same shape. Metatables are read as getmetatable()
** does (honouring __metatable): core.array_mt is kept as it is, another
** table is copied, any other value leaves the copy without one. Functions,
** userdata and threads are not copied (the same value). No metamethod
** runs (raw reads and writes only).
** Raises when tables nest deeper than 3,000 levels (JC_COPY_MAX_DEPTH;
** about 2,000 on PUC Lua 5.1 and LuaJIT, whose C functions get 8,000 stack
** slots).
** Upvalues: 1 core.array_mt, 2 an empty 'seen' table kept between calls;
** a call takes it (nil there until it is emptied and put back), so a call
** made meanwhile (a finalizer that copies) or after one that raised
** starts a fresh one.
** Stack: [-0, +1, e]
*/
static int jc_copy(lua_State *L) {
  int n = 0;
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));   /* 2: array_mt */
  lua_pushvalue(L, lua_upvalueindex(2));   /* 3: seen */
  if (lua_isnil(L, 3)) {
    lua_pop(L, 1);
    lua_newtable(L);
  }
  lua_pushnil(L);
  lua_replace(L, lua_upvalueindex(2));     /* taken */
  jc_copy_value(L, 1, 3, 2, 0);            /* 4 */
  lua_pushnil(L);
  while (lua_next(L, 3) != 0) {            /* empty it: nothing kept alive */
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, 3);
    n++;
  }
  if (n <= JC_COPY_SEEN_KEEP) {            /* a big one keeps a big node array */
    lua_pushvalue(L, 3);
    lua_replace(L, lua_upvalueindex(2));
  }
  return 1;
}

void jc_copy_open(lua_State *L) {
  luaL_getmetatable(L, JC_ARRAY_MT);
  lua_newtable(L);
  lua_pushcclosure(L, jc_copy, 2);
  lua_setfield(L, -2, "copy");
}
