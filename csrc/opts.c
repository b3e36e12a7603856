/*
** opts.c: the options reader (see opts.h).
*/
#include "opts.h"

#include <math.h>
#include <string.h>

static int jc_opt_bad(lua_State *L, int arg, const jc_opt *o) {
  return luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s",
                                               o->name, o->expect));
}

void jc_opts_read(lua_State *L, int arg, const jc_opt *specs,
                  jc_optval *out) {
  size_t i, n = 0;
  while (specs[n].name != NULL) n++;
  memset(out, 0, n * sizeof *out);
  if (lua_isnoneornil(L, arg)) return;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg) != 0) {
    const char *k;
    const jc_opt *o = NULL;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, arg, "option names must be strings");
    k = lua_tostring(L, -2);
    /* the first byte first: one strcmp per option given, not per spec
    ** (this runs on every call that passes options) */
    for (i = 0; i < n; i++)
      if (specs[i].name[0] == k[0] && strcmp(specs[i].name, k) == 0) {
        o = &specs[i];
        break;
      }
    if (o == NULL) {
      size_t kl = strlen(k), cut = kl > 60 ? 60 : kl;   /* a name, not a 10 MB key */
      while (cut < kl && cut > 0 && (((unsigned char)k[cut]) & 0xC0) == 0x80) cut--;
      lua_pushlstring(L, k, cut);
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s%s'",
                                            lua_tostring(L, -1),
                                            cut < kl ? "..." : ""));
    }
    out[i].set = 1;
    switch (o->type) {
      case JC_OPT_BOOL:
        if (lua_type(L, -1) != LUA_TBOOLEAN) jc_opt_bad(L, arg, o);
        out[i].b = lua_toboolean(L, -1);
        break;
      case JC_OPT_INT: {
        double v;
        if (lua_type(L, -1) != LUA_TNUMBER) jc_opt_bad(L, arg, o);
        v = (double)lua_tonumber(L, -1);
        if (v != floor(v) || v < o->lo || v > o->hi) jc_opt_bad(L, arg, o);
        out[i].n = v;
        break;
      }
      case JC_OPT_STRING:
        if (lua_type(L, -1) != LUA_TSTRING) jc_opt_bad(L, arg, o);
        out[i].s = lua_tostring(L, -1);
        if (o->choices != NULL) {
          int c;
          for (c = 0; o->choices[c] != NULL; c++)
            if (strcmp(o->choices[c], out[i].s) == 0) break;
          if (o->choices[c] == NULL) jc_opt_bad(L, arg, o);
          out[i].choice = c;
        }
        break;
      default:
        if (lua_type(L, -1) != LUA_TFUNCTION) jc_opt_bad(L, arg, o);
        break;
    }
    lua_pop(L, 1);
  }
}
