/*
** ffi.c: plain C entry points for LuaJIT's FFI (lua/jsoncontract/ffi.lua),
** the way lua-resty-core crosses into nginx: no lua_CFunction call and no
** Lua C API on the caller's state. The strict parser (parse.c) fills a
** tape; JIT-compiled Lua reads its entries (tape.h's 'jc_tv', mirrored in
** an ffi.cdef) and builds the Lua value with table.new and ffi.string.
**
** The parser writes its temporaries through a lua_State and raises only
** when memory runs out. A context therefore owns a private state
** (luaL_newstate), and nothing here touches the caller's state or calls
** back into Lua. The parse runs as a plain C call whose memory errors
** jump back to it (the tape's 'soft' jmp_buf, never unwinding through the
** caller's, possibly JIT-compiled, frames); the validator's verdict on a
** tape mostly needs no state at all (jc_verdict_nolua), and only a walk
** that needs the state's scratch runs under a lua_pcall on that state. A context is used by
** one Lua state at a time; the Lua side never reenters it (a finalizer run
** while a value is built takes the C API path).
**
** A failed parse returns 1 without the err: the caller asks core.decode,
** which makes the same err (kind, message, offset, line, column, pointer).
*/
#include "jc.h"
#include "parse.h"
#include "schema.h"
#include "tape.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jc_ffi_ctx {
  lua_State *L;     /* private: the tape at stack index 1, jc_ffi_run at 2 */
  jc_tape *t;
} jc_ffi_ctx;

typedef struct jc_ffi_job {
  jc_tape *t;
  jc_validator *v;      /* check: the validator, else NULL */
  const jc_tape *given; /* validate: a tape from core.parse, else NULL */
  const char *text;
  size_t len, max_depth, max_bytes;
  int r;
} jc_ffi_job;

JC_EXPORT jc_ffi_ctx *jc_ffi_new(void);
JC_EXPORT void jc_ffi_free(jc_ffi_ctx *c);
JC_EXPORT size_t jc_ffi_layout(int what);
JC_EXPORT int jc_ffi_check(jc_ffi_ctx *c, void *validator, const char *text,
                           size_t len, size_t max_depth, size_t max_bytes,
                           const jc_tv **entries, size_t *n, size_t *b,
                           size_t *e, char *errbuf, size_t errlen);
JC_EXPORT int jc_ffi_validate_tape(jc_ffi_ctx *c, void *validator,
                                   const void *tape, char *errbuf,
                                   size_t errlen);
JC_EXPORT int jc_ffi_parse(jc_ffi_ctx *c, const char *text, size_t len,
                           size_t max_depth, size_t max_bytes,
                           const jc_tv **entries, size_t *n, char *errbuf,
                           size_t errlen);

static int jc_ffi_run(lua_State *L);

/* Make the tape in the private state, and the function every job runs
** (made once: a C function pushed per call is an allocation per call on
** LuaJIT). [-0, +2, m] */
static int jc_ffi_init(lua_State *L) {
  jc_ffi_ctx *c = (jc_ffi_ctx *)lua_touserdata(L, 1);
  lua_settop(L, 0);
  c->t = jc_tape_new(L);
  lua_pushcfunction(L, jc_ffi_run);
  return 2;
}

/*
** A new context, or NULL when memory is short. Free it with jc_ffi_free.
*/
jc_ffi_ctx *jc_ffi_new(void) {
  jc_ffi_ctx *c = (jc_ffi_ctx *)calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->L = luaL_newstate();
  if (c->L == NULL) { free(c); return NULL; }
  lua_pushcfunction(c->L, jc_ffi_init);
  lua_pushlightuserdata(c->L, c);
  if (lua_pcall(c->L, 1, 2, 0) != 0 || c->t == NULL) {
    lua_close(c->L);
    free(c);
    return NULL;
  }
  /* stack index 1: the tape userdata, 2: jc_ffi_run, kept until
  ** jc_ffi_free */
  return c;
}

void jc_ffi_free(jc_ffi_ctx *c) {
  if (c == NULL) return;
  lua_close(c->L);
  free(c);
}

/*
** The layout the Lua side's cdef must match: what 0 sizeof(jc_tv), 1..4
** the offsets of flags, n, s and u; 5 and 6 core.decode's default
** max_depth and max_bytes. Another 'what': 0.
*/
size_t jc_ffi_layout(int what) {
  switch (what) {
    case 0: return sizeof(jc_tv);
    case 1: return offsetof(jc_tv, flags);
    case 2: return offsetof(jc_tv, n);
    case 3: return offsetof(jc_tv, s);
    case 4: return offsetof(jc_tv, u);
    case 5: return JC_MAX_DEPTH;
    case 6: return JC_MAX_BYTES;
    default: return 0;
  }
}

/* Under the pcall: the validator's quiet verdict on j->given with the
** state (a walk that needs its scratch: dynamic scope, locations). */
static int jc_ffi_run(lua_State *L) {
  jc_ffi_job *j = (jc_ffi_job *)lua_touserdata(L, -1);
  jc_vopts o;
  memset(&o, 0, sizeof o);
  o.max_errors = 1;
  o.verdict_only = 1;
  lua_settop(L, 0);
  j->r = jc_run(L, j->v, j->given, &o, 0) == 0 ? 0 : 1;
  return 0;
}

/* The parse of j's text into the context's tape and, with j->v, the
** verdict that needs no state: a plain C call, no lua_pcall (inside nginx
** the protected call cost about as much as the parse of a small reply's
** members). The parser raises only when memory runs out; here that jumps
** back (the tape's 'soft') and is reported as the pcall would report it.
** Returns 0, 1, 2 (the verdict needs the state: the tape is parsed) or -1
** (message in errbuf). */
static int jc_ffi_soft(jc_ffi_ctx *c, const jc_ffi_job *j, char *errbuf,
                       size_t errlen) {
  jc_tape *t = c->t;
  jmp_buf out;
  int r;
  jc_tape_reset(t);
  t->soft = &out;
  if (setjmp(out) != 0) {   /* from jc_tape_nomem: nothing else is held */
    t->soft = NULL;
    if (errlen > 0) snprintf(errbuf, errlen, "not enough memory");
    return -1;
  }
  r = jc_parse_tape_quiet(c->L, t, j->text, j->len, j->max_depth,
                          j->max_bytes);
  t->soft = NULL;
  if (r != 0 || j->v == NULL) return r;
  return jc_verdict_nolua(j->v, t);
}

/* Run 'j' on the private state. Returns 0, 1 (j->r) or -1 (message in
** errbuf). */
static int jc_ffi_job_run(jc_ffi_ctx *c, jc_ffi_job *j, char *errbuf,
                          size_t errlen) {
  lua_State *L = c->L;
  int status;
  if (j->given == NULL) {
    int r = jc_ffi_soft(c, j, errbuf, errlen);
    if (r != 2) return r;
    j->given = c->t;   /* the walk with the state, on the parsed tape */
  }
  j->t = c->t;
  j->r = -1;
  lua_pushvalue(L, 2);
  lua_pushlightuserdata(L, j);
  status = lua_pcall(L, 1, 0, 0);   /* leaves the stack at 2 when it ends */
  if (status != 0) {
    const char *msg = lua_tostring(L, -1);
    if (errlen > 0)
      snprintf(errbuf, errlen, "%s", msg != NULL ? msg : "not enough memory");
    lua_settop(L, 2);
    return -1;
  }
  return j->r != 0;
}

/* The strict parse of text[0..len) into the context's own tape and, with
** 'v', the validator's quiet verdict on it. Returns as jc_ffi_job_run. */
static int jc_ffi_run_text(jc_ffi_ctx *c, jc_validator *v, const char *text,
                           size_t len, size_t max_depth, size_t max_bytes,
                           char *errbuf, size_t errlen) {
  jc_ffi_job j;
  memset(&j, 0, sizeof j);
  j.v = v;
  j.text = text;
  j.len = len;
  j.max_depth = max_depth;
  j.max_bytes = max_bytes;
  return jc_ffi_job_run(c, &j, errbuf, errlen);
}

/*
** Parse text[0..len) (text[len] must be '\0', as in a Lua string) as
** core.decode does with max_depth and max_bytes. Returns 0 with
** '*entries' and '*n' the tape's entries (valid until the next call on 'c'
** or jc_ffi_free; strings point into 'text' or the context's arena); 1 on
** a format error (no details: core.decode gives the err); -1 when the
** parse failed otherwise (memory), with a message in errbuf[0..errlen).
*/
int jc_ffi_parse(jc_ffi_ctx *c, const char *text, size_t len,
                 size_t max_depth, size_t max_bytes, const jc_tv **entries,
                 size_t *n, char *errbuf, size_t errlen) {
  int r = jc_ffi_run_text(c, NULL, text, len, max_depth, max_bytes, errbuf,
                          errlen);
  if (r != 0) return r;
  *entries = c->t->v;
  *n = c->t->n;
  return 0;
}

/*
** validator:check_json's and check's gates on text[0..len) ('\0' at
** text[len]): the strict parse as jc_ffi_parse, then the validator's quiet
** verdict on the tape ('validator': the payload of a "jsoncontract.
** Validator" userdata, which the caller keeps reachable). Returns 0 when
** the text is valid JSON and valid, with the tape's entries as
** jc_ffi_parse and text[*b..*e) the value without the whitespace around
** it; 1 when it is not, or the validator is closed (no err: the caller
** asks the C API, which reports exactly); -1 on a memory error (message
** in errbuf). Calls no Lua code: the validator cannot be closed meanwhile.
*/
int jc_ffi_check(jc_ffi_ctx *c, void *validator, const char *text,
                 size_t len, size_t max_depth, size_t max_bytes,
                 const jc_tv **entries, size_t *n, size_t *b, size_t *e,
                 char *errbuf, size_t errlen) {
  jc_validator *v = (jc_validator *)validator;
  size_t lo = 0, hi = len;
  int r;
  /* v->busy: a finalizer called us inside a walk of 'v', whose scratch
  ** (dynamic scope, locations) is in use: the C API answers that call */
  if (v == NULL || v->root == NULL || v->closing || v->busy) return 1;
  r = jc_ffi_run_text(c, v, text, len, max_depth, max_bytes, errbuf, errlen);
  if (r != 0) return r;
  while (lo < hi && (text[lo] == ' ' || text[lo] == '\t' || text[lo] == '\n'
                     || text[lo] == '\r'))
    lo++;
  while (hi > lo && (text[hi - 1] == ' ' || text[hi - 1] == '\t'
                     || text[hi - 1] == '\n' || text[hi - 1] == '\r'))
    hi--;
  *entries = c->t->v;
  *n = c->t->n;
  *b = lo;
  *e = hi;
  return 0;
}

/*
** validator:validate(tape)'s verdict: 'tape' the payload of a
** "jsoncontract.Tape" userdata from core.parse, 'validator' of a
** "jsoncontract.Validator" (the caller keeps both reachable). Returns 0
** when the tape's value is valid; 1 when it is not or the validator is
** closed (the caller asks the C API, which reports); -1 on a memory error
** (message in errbuf). The context's own tape is left alone.
*/
int jc_ffi_validate_tape(jc_ffi_ctx *c, void *validator, const void *tape,
                         char *errbuf, size_t errlen) {
  jc_validator *v = (jc_validator *)validator;
  jc_ffi_job j;
  int r;
  if (v == NULL || v->root == NULL || v->closing || v->busy || tape == NULL)
    return 1;                  /* v->busy: as in jc_ffi_check */
  /* most verdicts need no state: no pcall, nothing can raise */
  r = jc_verdict_nolua(v, (const jc_tape *)tape);
  if (r != 2) return r;
  memset(&j, 0, sizeof j);
  j.v = v;
  j.given = (const jc_tape *)tape;
  return jc_ffi_job_run(c, &j, errbuf, errlen);
}
