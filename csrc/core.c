/*
** core.c: luaopen_jsoncontract_core and the JSON null / array markers.
** See jc.h.
*/
#include "jc.h"
#include "parse.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

/*
** core.sha256(data) -> hex
** SHA-256 (FIPS 180-4) of the byte string 'data', as 64 lowercase hex
** characters. Used for schema hashes and evidence file digests. Computed by
** OpenSSL's libcrypto (EVP_Digest), not by our own code.
** Raises when 'data' is not a string or libcrypto fails.
** Stack: [-0, +1, e]
*/
static int jc_sha256(lua_State *L) {
  size_t len, i;
  const char *data = luaL_checklstring(L, 1, &len);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char hex[2 * EVP_MAX_MD_SIZE];
  static const char digits[] = "0123456789abcdef";
  luaL_argcheck(L, lua_gettop(L) == 1, 2, "no value expected");
  if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
    return luaL_error(L, "sha256: libcrypto failed");
  for (i = 0; i < mdlen; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  lua_pushlstring(L, hex, 2 * (size_t)mdlen);
  return 1;
}

/*
** core.monotonic() -> seconds
** Seconds (a float, nanosecond resolution) on the system's monotonic clock
** (POSIX clock_gettime, CLOCK_MONOTONIC): for measuring intervals and
** budgets; it never jumps with the wall clock, and its origin is arbitrary
** (compare two readings, never show one). A plain C call: no syscall on
** Linux (vDSO), and unlike ngx.update_time() it formats nothing.
** Raises "monotonic: clock_gettime failed" if the clock cannot be read.
** Stack: [-0, +1, e]
*/
static int jc_monotonic(lua_State *L) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return luaL_error(L, "monotonic: clock_gettime failed");
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
  return 1;
}

LUALIB_API JC_EXPORT int luaopen_jsoncontract_core(lua_State *L);

/*
** require "jsoncontract.core" -> module table with
**   null        light userdata NULL: JSON null (equal to cjson.null)
**   array_mt    metatable that marks a table as a JSON array (decode sets it)
**   error_mt    the metatable of every err's metatable (see jc.h, error.c)
**   error       error(fields) -> err, error_fields(err) -> fields (error.c)
**   _VERSION    the project version (from the Makefile, -DJC_VERSION)
**   sha256      sha256(data) -> 64 hex chars (see jc_sha256)
**   monotonic   monotonic() -> seconds on the monotonic clock (jc_monotonic)
**   MAX_DEPTH   the largest 'max_depth' the parser accepts (levels, 3000):
**               no value read from text nests deeper
**   DEFAULT_MAX_DEPTH  the 'max_depth' decode uses when none is given
**               (levels, 1000): what a reader of our output takes
** and the functions of each area file.
*/
/* __newindex of the array marker's own metatable: the marker is shared by
** every JSON array, so it takes no new field. */
static int jc_array_mt_frozen(lua_State *L) {
  return luaL_error(L, "jsoncontract.array_mt is shared by every JSON array: "
                       "it cannot be changed");
}

LUALIB_API JC_EXPORT int luaopen_jsoncontract_core(lua_State *L) {
  lua_newtable(L);

  jc_error_open(L);

  if (luaL_newmetatable(L, JC_ARRAY_MT)) {
    lua_pushliteral(L, JC_ARRAY_MT);
    lua_setfield(L, -2, "__name");
    /* Every JSON array of the process shares this table: a field added to
    ** it (an __index, say, by a rule that got an array) would change them
    ** all. New fields raise, and its own metatable cannot be replaced. */
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, jc_array_mt_frozen);
    lua_setfield(L, -2, "__newindex");
    lua_pushliteral(L, JC_ARRAY_MT);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
  }
  lua_setfield(L, -2, "array_mt");

  jc_pushnull(L);
  lua_setfield(L, -2, "null");
  lua_pushliteral(L, JC_VERSION);
  lua_setfield(L, -2, "_VERSION");
  lua_pushcfunction(L, jc_sha256);
  lua_setfield(L, -2, "sha256");
  lua_pushcfunction(L, jc_monotonic);
  lua_setfield(L, -2, "monotonic");
  lua_pushinteger(L, JC_MAX_DEPTH_LIMIT);
  lua_setfield(L, -2, "MAX_DEPTH");
  lua_pushinteger(L, JC_MAX_DEPTH);
  lua_setfield(L, -2, "DEFAULT_MAX_DEPTH");

  jc_parse_open(L);
  jc_encode_open(L);
  jc_schema_open(L);
  jc_transport_open(L);
  jc_stream_open(L);
  return 1;
}
