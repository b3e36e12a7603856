/*
** pattern.c: PCRE2 regular expressions for the schema gate. See pattern.h.
*/
#include "pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string.h>

#define JC_PATTERN_MT "jsoncontract.Pattern"
#define JC_MATCHER_MT "jsoncontract.Matcher"

struct jc_pattern {
  pcre2_code *code;   /* owned; NULL once freed or when compile failed */
};

struct jc_matcher {
  pcre2_match_data *md;      /* owned */
  pcre2_match_context *mc;   /* owned */
};

/* __gc of "jsoncontract.Pattern": frees the code once. [-0, +0, -] */
static int jc_pattern_gc(lua_State *L) {
  jc_pattern *p = (jc_pattern *)luaL_checkudata(L, 1, JC_PATTERN_MT);
  if (p->code != NULL) {
    pcre2_code_free(p->code);
    p->code = NULL;
  }
  return 0;
}

/* __gc of "jsoncontract.Matcher": frees match data and context once.
** [-0, +0, -] */
static int jc_matcher_gc(lua_State *L) {
  jc_matcher *m = (jc_matcher *)luaL_checkudata(L, 1, JC_MATCHER_MT);
  if (m->md != NULL) {
    pcre2_match_data_free(m->md);
    m->md = NULL;
  }
  if (m->mc != NULL) {
    pcre2_match_context_free(m->mc);
    m->mc = NULL;
  }
  return 0;
}

/* Set the metatable 'name' (created on first use, with __gc and __name) on
** the userdata at the top. [-0, +0, m] */
static void jc_pattern_setmeta(lua_State *L, const char *name,
                               lua_CFunction gc) {
  if (luaL_newmetatable(L, name)) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
}

jc_pattern *jc_pattern_compile(lua_State *L, const char *src, size_t len,
                               char *msg, size_t msgsz, size_t *offset) {
  jc_pattern *p = (jc_pattern *)jc_newuserdata(L, sizeof(jc_pattern));
  int errcode = 0;
  PCRE2_SIZE erroff = 0;
  p->code = NULL;
  jc_pattern_setmeta(L, JC_PATTERN_MT, jc_pattern_gc);
  /* From here to the store below no Lua API call runs. */
  p->code = pcre2_compile((PCRE2_SPTR)src, (PCRE2_SIZE)len,
                          PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX,
                          &errcode, &erroff, NULL);
  if (p->code == NULL) {
    if (msgsz > 0) {
      msg[0] = '\0';
      if (pcre2_get_error_message(errcode, (PCRE2_UCHAR *)msg, msgsz) < 0)
        msg[msgsz - 1] = '\0';
    }
    *offset = (size_t)erroff;
    return NULL;
  }
  return p;
}

jc_matcher *jc_matcher_new(lua_State *L) {
  jc_matcher *m = (jc_matcher *)jc_newuserdata(L, sizeof(jc_matcher));
  m->md = NULL;
  m->mc = NULL;
  jc_pattern_setmeta(L, JC_MATCHER_MT, jc_matcher_gc);
  m->md = pcre2_match_data_create(1, NULL);
  m->mc = pcre2_match_context_create(NULL);
  if (m->md == NULL || m->mc == NULL)
    luaL_error(L, "not enough memory");   /* __gc frees what was made */
  pcre2_set_match_limit(m->mc, JC_PATTERN_MATCH_LIMIT);
  pcre2_set_depth_limit(m->mc, JC_PATTERN_DEPTH_LIMIT);
  pcre2_set_heap_limit(m->mc, JC_PATTERN_HEAP_LIMIT);
  return m;
}

int jc_pattern_match(const jc_pattern *p, jc_matcher *m, const char *s,
                     size_t len) {
  int rc;
  if (p->code == NULL || m->md == NULL || m->mc == NULL)
    return JC_PATTERN_ERROR;
  rc = pcre2_match(p->code, (PCRE2_SPTR)s, (PCRE2_SIZE)len, 0, 0, m->md,
                   m->mc);
  if (rc >= 0) return JC_PATTERN_MATCH;
  switch (rc) {
    case PCRE2_ERROR_NOMATCH:
      return JC_PATTERN_NOMATCH;
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
    case PCRE2_ERROR_NOMEMORY:
      return JC_PATTERN_LIMIT;
    default:
      if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        return JC_PATTERN_BADUTF;
      return JC_PATTERN_ERROR;
  }
}
