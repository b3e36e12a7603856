/*
** jc.h: types, limits and the error helper shared by the C files of
** jsoncontract.core. Each area file ('parse.c', 'encode.c', 'schema.c',
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

/* Registry names. */
#define JC_ERROR_MT "jsoncontract.error"   /* metatable of every err table */
#define JC_ARRAY_MT "jsoncontract.array"   /* marks a Lua table as a JSON array */

/* JSON null is the light userdata NULL, as in lua-cjson, so cjson.null and
** jsoncontract.null are the same value. */
#define jc_pushnull(L) lua_pushlightuserdata((L), NULL)
#define jc_isnull(L, i) \
  (lua_type((L), (i)) == LUA_TLIGHTUSERDATA && lua_touserdata((L), (i)) == NULL)

/*
** Push a new err table { category = category, kind = kind, message = <fmt> }
** with the shared metatable 'jsoncontract.error' (its __tostring renders
** "category/kind: message"). Callers add further fields (offset, errors, ...).
** Stack: [-0, +1, m]
*/
void jc_push_error(lua_State *L, const char *category, const char *kind,
                   const char *fmt, ...);

/* Area entry points: each adds its functions to the table at the top of the
** stack. Stack: [-0, +0, m] */
void jc_parse_open(lua_State *L);
void jc_encode_open(lua_State *L);
void jc_schema_open(lua_State *L);
void jc_transport_open(lua_State *L);
void jc_stream_open(lua_State *L);

#endif
