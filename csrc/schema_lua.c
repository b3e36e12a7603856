/*
** schema_lua.c: the Lua bindings of the schema gate: core.compile and the
** "jsoncontract.Validator" methods validate, check, check_json and close.
**
** The schema gate. A JSON Schema (draft 2020-12 keywords, as Lua
** values) is compiled into a tree of C nodes owned by a userdata
** "jsoncontract.Validator"; 'validate', 'check' and 'check_json' validate
** one instance on its tape (tape.h: written by the parser from text, or
** from a Lua value in one walk) in one C call and return every error as a
** list; 'check_json' answers with the accepted text, building no Lua value.
**
** Ownership: every compiled piece (nodes, arrays of nodes, kept strings,
** PCRE2 patterns, the matcher, the path scratch, enum/const tapes, the
** tape reused by validate/check) is a Lua value stored in
** one "keep" table; the validator holds a registry reference to it, dropped
** by its __gc. A compile that raises halfway leaves only garbage for the
** collector. No C pointer outlives the keep table.
**
** Keywords (draft 2020-12, draft-07, draft-04; '$schema' or the 'draft'
** option picks): type, enum, const, required, properties,
** patternProperties, additionalProperties, propertyNames, min/maxProperties,
** dependentRequired, dependentSchemas, dependencies, prefixItems, items,
** additionalItems, contains, min/maxContains, min/maxItems, uniqueItems,
** min/maxLength, pattern, format, minimum, maximum, exclusive* (numbers and
** draft-04 booleans), multipleOf (exact in decimal), allOf, anyOf, oneOf,
** not, if/then/else, unevaluatedProperties, unevaluatedItems, $ref, $defs,
** definitions, $id / id (RFC 3986 base URIs), $anchor, $dynamicRef,
** $dynamicAnchor, remote documents through a Lua 'loader' (at compile time,
** under lua_pcall), custom meta-schemas' $vocabulary (validation on/off).
** Draft 4/7: '$ref' ignores its siblings. Compile first indexes every
** schema resource ('jc_index'), then compiles nodes ('jc_compile_node'),
** then rejects reference cycles that never consume input.
** unevaluated* are computed by 'jc_collect' (annotations of the in-place
** subschemas that passed); $dynamicRef walks the dynamic scope of
** resources kept during evaluation.
** Writing a Lua value to the tape checks the whole instance is JSON (the
** walk sees only what the schema looks at) and raises with the pointer;
** uniqueItems, enum and const compare tape values exactly (int64 and
** digits beyond, before any double); uniqueItems hashes items
** ('jc_find_duplicate'); the walk has a work budget and a memo
** (schema_eval.c); errors stop at
** validate's max_errors and messages are bounded (JC_ENUM_SHOW values per
** enum message, JC_MESSAGE_JOIN messages in err.message).
*/
#include "schema.h"

/* ===================================================================== */
/* Lua API                                                                 */
/* ===================================================================== */

/* Drop the keep table (once) and forget what pointed into it. */
static void jc_validator_free(lua_State *L, jc_validator *v) {
  if (v->keep_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, v->keep_ref);
    v->keep_ref = LUA_NOREF;
  }
  v->root = NULL;
  v->tape = NULL;
  v->matcher = NULL;
  v->segs = NULL;
  v->closing = 0;
}

/* __gc (and close) of "jsoncontract.Validator": drops the keep table once.
** While a call runs (close from a __gc inside it) the free waits for its
** end: that call still walks the nodes, segs and tape the keep table owns,
** and the validator is anchored on its stack, so __gc itself never comes
** then (only lua_close's finalizers, which end the state anyway). */
static int jc_validator_gc(lua_State *L) {
  jc_validator *v = (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
  if (v->busy) v->closing = 1;
  else jc_validator_free(L, v);
  return 0;
}

static int jc_validator_tostring(lua_State *L) {
  jc_validator *v = (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
  lua_pushfstring(L, "jsoncontract.Validator (%p)%s", (void *)v,
                  v->root == NULL || v->closing ? " (closed)" : "");
  return 1;
}

static const char *const jc_draft_names[] = {
  "2020-12", "draft2020-12", "2019-09", "draft7", "draft-07", "draft4",
  "draft-04", NULL
};

static const jc_opt jc_compile_opts[] = {
  { "format_assertion", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "draft", JC_OPT_STRING, 0, 0, "\"2020-12\", \"draft7\" or \"draft4\"",
    jc_draft_names },
  { "loader", JC_OPT_FUNCTION, 0, 0, "a function", NULL },
  { "max_depth", JC_OPT_INT, 1, JC_SCHEMA_MAX_DEPTH_LIMIT,
    "an integer from 1 to 10000", NULL },
  { "work_budget", JC_OPT_INT, 1, 1e15, "an integer from 1 to 1e15", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/*
** core.compile(schema [, opts]) -> validator [, schema value]
**   schema  table (a JSON Schema as decoded) or boolean, or its JSON text:
**           parsed strictly (as core.decode), and every number the text
**           writes kept as written, so a bound, const or enum integer
**           beyond 2^53 (LuaJIT's doubles) or beyond int64 (Lua 5.4) is
**           exact; the schema value built from the text (as
**           core.decode(text, {keep_order = true})) is returned second
**   opts    table or nil: draft ("2020-12" default, "draft7", "draft4"; a
**           known '$schema' wins), loader (function(uri) -> schema | nil,
**           err: called at compile time, under lua_pcall, for each document
**           a reference names that the schema does not hold),
**           format_assertion (boolean, default false: 'format' is an
**           annotation as in 2020-12 §7.2.1; true asserts date, time,
**           date-time, duration, email, hostname, ipv4, ipv6, uri,
**           uri-reference, iri, iri-reference, uri-template, uuid, regex,
**           json-pointer, relative-json-pointer), max_depth (integer
**           1..10000, default
**           1000: instance depth bound, deeper values fail as "too_deep"),
**           work_budget (integer 1..1e15 work units per validation;
**           default 20,000,000 plus 16 per value of the instance: one
**           unit per subschema evaluated, a regex search 1 + 1 per 16
**           bytes, 100,000 more when it hits a PCRE2 limit; past it
**           the instance fails as "budget_exceeded"; an invalid instance
**           is walked twice, for the verdict then for its errors, each
**           walk with the whole budget)
** Returns a "jsoncontract.Validator" userdata (garbage collected).
** Raises "invalid schema at <schema pointer>: <reason>" for a bad schema,
** "schema is not JSON: <format error message>" for text that is not JSON,
** and on misuse (bad argument, unknown option).
** Stack: [-0, +1, e]
*/
static int jc_schema_compile(lua_State *L) {
  jc_validator *v;
  jc_cctx c;
  size_t len;
  int i;
  int t = lua_type(L, 1);
  int fa = 0, maxd = JC_SCHEMA_MAX_DEPTH, draft = 0, loader = 0;
  jc_optval ov[5];
  luaL_argcheck(L, t == LUA_TTABLE || t == LUA_TBOOLEAN || t == LUA_TSTRING,
                1, "table, boolean or JSON text expected");
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  jc_opts_read(L, 2, jc_compile_opts, ov);
  fa = ov[0].set && ov[0].b;
  if (ov[1].set) draft = jc_draft_name(ov[1].s);
  loader = ov[2].set;
  if (ov[3].set) maxd = (int)ov[3].n;
  if (loader) lua_getfield(L, 2, "loader");
  else lua_pushnil(L);
  lua_replace(L, 2);                 /* 2: loader or nil */
  lua_settop(L, 2);
  c.src = NULL;
  c.srcmap = 0;
  if (t == LUA_TSTRING) {
    /* JSON text: parsed to a tape (strictly, as core.decode), the schema
    ** value built from it with its key order, and every table's entry
    ** remembered, so numbers are read as the text wrote them */
    size_t tl;
    const char *text = lua_tolstring(L, 1, &tl);
    jc_tape *st = jc_tape_new(L);            /* 3: the text's tape */
    if (jc_parse_tape(L, st, text, tl, JC_MAX_DEPTH, JC_MAX_BYTES) != 0) {
      lua_getfield(L, -1, "message");
      return luaL_error(L, "schema is not JSON: %s", lua_tostring(L, -1));
    }
    lua_newtable(L);                          /* 4: table -> entry */
    jc_tape_push_lua(L, st, 0, 1, 0, 4);      /* 5: the schema value */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 5);
    lua_replace(L, 1);                        /* 1: the schema value */
    lua_replace(L, 5);                        /* 5: the text */
    c.src = st;
    c.srcmap = 4;
    t = lua_type(L, 1);
  } else {
    lua_settop(L, 5);
  }
  /* stack: 1 schema, 2 loader, 3 text's tape, 4 its map, 5 text (or nils) */
  /* '$schema' wins over the 'draft' option */
  c.novalidation = 0;
  if (t == LUA_TTABLE) {
    if (jc_getkw(L, 1, "$schema") == LUA_TSTRING) {
      int d = jc_draft_uri(lua_tostring(L, -1));
      if (d != 0) draft = d;
      else if (loader) c.novalidation = jc_meta_novalidation(L, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  if (draft == 0) draft = JC_D2020;
  /* owner first: everything below hangs off its keep table */
  v = (jc_validator *)jc_newuserdata(L, sizeof(jc_validator));
  memset(v, 0, sizeof *v);
  v->keep_ref = LUA_NOREF;
  luaL_setmetatable(L, JC_VALIDATOR_MT);
  v->max_depth = maxd;
  v->format_assertion = fa;
  v->work_budget = ov[4].set ? ov[4].n : 0;
  luaL_getmetatable(L, JC_ARRAY_MT);
  v->amt = lua_topointer(L, -1);
  lua_pop(L, 1);
  luaL_getmetatable(L, JC_TAPE_MT);   /* made by jc_schema_open */
  v->tmt = lua_topointer(L, -1);
  lua_pop(L, 1);
  lua_newtable(L);                   /* 7: keep */
  lua_pushvalue(L, -1);
  v->keep_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);                   /* 8: cache */
  c.L = L;
  c.keep = 7;
  c.nkeep = 0;
  c.cache = 8;
  c.root = 1;
  c.nest = 0;
  c.v = v;
  c.draft = draft;
  c.loader = loader ? 2 : 0;
  lua_newtable(L); c.reg = lua_gettop(L);
  lua_newtable(L); c.anchors = lua_gettop(L);
  lua_newtable(L); c.dyns = lua_gettop(L);
  lua_newtable(L); c.loc = lua_gettop(L);
  lua_newtable(L); c.baseof = lua_gettop(L);
  lua_newtable(L); c.resof = lua_gettop(L);
  lua_newtable(L); c.nodes = lua_gettop(L);
  lua_newtable(L); c.draftof = lua_gettop(L);
  c.nnodes = 0;
  v->scope = (jc_res **)jc_keep_block(&c, JC_SCHEMA_MAX_EVAL + 2,
                                      sizeof(jc_res *));
  v->via = (jc_via *)jc_keep_block(&c, JC_SCHEMA_MAX_EVAL + 2,
                                   sizeof(jc_via));
  v->matcher = jc_matcher_new(L);
  jc_keep(&c);
  v->segs = (jc_seg *)jc_keep_block(&c, (size_t)maxd + 1, sizeof(jc_seg));
  lua_pushliteral(L, "");
  lua_pushvalue(L, 1);
  jc_setpair(L, c.reg);
  v->base = "";
  jc_index(&c, 1, "", 0, "", 0, 0);
  if (t == LUA_TTABLE) {
    lua_pushvalue(L, 1);
    lua_rawget(L, c.baseof);
    if (lua_isstring(L, -1)) v->base = jc_keep_string(&c, &len);
    else lua_pop(L, 1);   /* not a schema: jc_compile_node raises */
  }
  lua_pushliteral(L, "");
  {
    const char *root = jc_keep_string(&c, &len);
    const char *abs;
    jc_push_join(L, v->base, strlen(v->base), '#', "", 0);
    abs = jc_keep_string(&c, &len);
    v->root = jc_compile_node(&c, 1, root, abs, v->base);
  }
  for (i = 1; i <= c.nnodes; i++) {
    lua_rawgeti(L, c.nodes, i);
    jc_check_cycles(&c, (jc_node *)lua_touserdata(L, -1));
    jc_node_finish(v, (jc_node *)lua_touserdata(L, -1));
    lua_pop(L, 1);
  }
  for (i = 1; i <= c.nnodes; i++) {
    lua_rawgeti(L, c.nodes, i);
    jc_node_link(v, (jc_node *)lua_touserdata(L, -1));
    lua_pop(L, 1);
  }
  for (i = 1; i <= c.nnodes; i++) {
    lua_rawgeti(L, c.nodes, i);
    jc_node_props_pass((jc_node *)lua_touserdata(L, -1));
    lua_pop(L, 1);
  }
  if (c.src != NULL) {
    /* the text and its tape stay while the validator does: bounds beyond
    ** int64 and const/enum values point into them */
    lua_pushvalue(L, 3);
    jc_keep(&c);
    lua_pushvalue(L, 5);
    jc_keep(&c);
  }
  lua_settop(L, 6);
  if (c.src == NULL) return 1;
  lua_pushvalue(L, 1);
  return 2;
}

/* The validator's own tape (kept in its keep table), or a fresh one left
** on the stack (its only anchor) when that one is in use. The caller
** returns its results from the top, so the anchor needs no removing.
** [-0, +(0|1), m] */
static jc_tape *jc_v_tape(lua_State *L, jc_validator *v) {
  jc_tape *t = v->tape;
  if (t == NULL) {            /* first use: made and kept (keep.tape) */
    t = jc_tape_new(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, v->keep_ref);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "tape");
    lua_pop(L, 2);
    v->tape = t;
  } else if (t->busy) {
    /* in use (a reentrant call from a __gc, or a memory error skipped
    ** its release): a fresh one, anchored on the stack only; the kept
    ** one is never replaced while a call may be using it */
    t = jc_tape_new(L);
  }
  t->busy = 1;                /* a new tape is empty, a released one reset */
  return t;
}

static const char *const jc_output_names[] = { "basic", NULL };

static const jc_opt jc_validate_opts[] = {
  { "first", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "output", JC_OPT_STRING, 0, 0, "\"basic\"", jc_output_names },
  { "decoded", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "max_errors", JC_OPT_INT, 0, 1e9, "an integer from 0 to 1e9", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/*
** validator:validate(value [, opts]) -> true | nil, err
**   value  a JSON value as Lua (tables, strings, numbers, booleans, null),
**          or a tape from core.parse (validated as it is, errors with
**          offset/line/column as validator:check gives them)
**   opts   table or nil: first (boolean: stop at the first error),
**          output ("basic": return JSON Schema's basic output table
**          { valid, errors = { {keywordLocation, absoluteKeywordLocation,
**          instanceLocation, error}, ... } } instead, valid or not,
**          with truncated = true when max_errors stopped the walk;
**          keywordLocation runs through the references followed,
**          "/properties/a/$ref/type", where schema_pointer names the
**          keyword where it stands, "/$defs/id/type"),
**          decoded (boolean, accepted and ignored: every value is written
**          to a tape in one walk that checks it is JSON),
**          max_errors (integer, default 100, 0 = no bound: errors kept;
**          at one more the walk stops and err.truncated = true)
** The value is written to a tape (tape.h) in one walk, then validated on
** the tape: the same validator as validator:check on text.
** err = { category = "schema",
**         kind = "schema_mismatch" | "too_deep" | "budget_exceeded",
**         message = <the first 20 messages joined by "; ", then
**                    "; and N more errors", "; stopped after N errors">,
**         truncated = true when max_errors stopped the walk,
**         errors = { { pointer, keyword, schema_pointer,
**                      absolute_schema_location, message, ...}, ...} }
** Reentrant: a call from inside a running call of the same validator (a
** __gc run by an allocation) works on scratch of its own, leaving the
** running call's intact.
** Raises on misuse: a closed validator, an unknown option, a value that
** is not JSON anywhere in it, whatever the schema checks: a function,
** coroutine or userdata, NaN or +-infinity, a string or key that is not
** UTF-8 (RFC 8259 §8.1), an object key that is not a
** string (number keys too, as 'core.encode' refuses them), a marked
** array with keys other than 1..n: "value at /a/0 is NaN, not JSON"; a
** table that contains itself: "value at /a is a table that contains
** itself (a cycle), not JSON" (a table met twice on different branches
** is fine, and written twice). An instance deeper than max_depth is
** too_deep even for a 'true' schema.
** Stack: [-0, +1|2, e]
*/
/* 'self' of a method whose upvalue 1 is the Validator metatable: compared
** by identity (no registry lookup by name); luaL_checkudata's message
** otherwise. */
static jc_validator *jc_self(lua_State *L) {
  void *p = lua_touserdata(L, 1);
  if (p != NULL && lua_getmetatable(L, 1)) {
    /* tables compare by address: lua_topointer is cheaper than
    ** lua_rawequal on an upvalue (two lookups, a generic compare) */
    int same = lua_topointer(L, -1) == lua_topointer(L, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same) return (jc_validator *)p;
  }
  return (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
}

/* What a validate/check call passes to its protected body (jc_v_call). */
typedef struct jc_vcall {
  jc_validator *v;
  jc_vopts o;
  jc_tape *tape;              /* validate: a tape from core.parse, or NULL */
  int json;                   /* check_json (1) or check (0) */
  int value;                  /* check: push the Lua value too */
  int keep_order;
  int parsed;                 /* check: the text is on v->tape already */
  size_t max_depth, max_bytes;
} jc_vcall;

/* The methods' upvalues: 1 the Validator metatable (jc_self), then the
** protected bodies as Lua values, made once at registration: pushing a C
** function allocates a closure on Lua 5.1 and LuaJIT, and an allocation
** before the busy mark may run a __gc that calls the validator. */
#define JC_UP_VALIDATE 2
#define JC_UP_CHECK 3

/* Run the body at upvalue 'body' for validator 'c->v' (stack index 1) on
** the value at index 2, under jc_pcall_marked. The validator's path
** segments, dynamic scope, via stack and tape belong to one call at a
** time, but a finalizer run by an
** allocation inside the walk may call it again, or close it. A call made
** while another runs gets scratch of its own (fresh blocks here, a fresh
** tape from jc_v_tape) and puts the running call's back when it ends, so
** that call finds them as it left them. Whatever the exit, the mark is
** restored, the outermost call releases the kept tape, and a close that
** came meanwhile is done once no call runs; then the results are returned
** or the error rethrown. [-0, +n, e] */
static int jc_v_call(lua_State *L, jc_vcall *c, int body) {
  jc_validator *v = c->v;
  jc_seg *segs = NULL;
  jc_res **scope = NULL;
  jc_via *via = NULL;
  int nested = v->busy, base, st;
  if (lua_gettop(L) != 2) lua_settop(L, 2);
  if (nested) {
    /* allocating may run another __gc: the blocks are taken before any
    ** pointer of the validator is read (3, 4, 5: anchors) */
    jc_seg *ns = (jc_seg *)jc_newuserdata(
        L, ((size_t)v->max_depth + 1) * sizeof(jc_seg));
    jc_res **nsc = (jc_res **)jc_newuserdata(
        L, (JC_SCHEMA_MAX_EVAL + 2) * sizeof(jc_res *));
    jc_via *nv = (jc_via *)jc_newuserdata(
        L, (JC_SCHEMA_MAX_EVAL + 2) * sizeof(jc_via));
    /* closed meanwhile (the check before the mark): no new call */
    if (v->root == NULL || v->closing)
      return luaL_error(L, "validator is closed");
    segs = v->segs;
    scope = v->scope;
    via = v->via;
    v->segs = ns;
    v->scope = nsc;
    v->via = nv;
  }
  base = lua_gettop(L);
  /* nothing from here to the mark allocates (the body is an upvalue),
  ** so no __gc runs in between: a tape jc_check_json_quick handed over
  ** is still as it left it when the body starts */
  lua_pushvalue(L, lua_upvalueindex(body));
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushlightuserdata(L, c);
  st = jc_pcall_marked(L, 3, &v->busy);
  if (nested) {
    v->segs = segs;
    v->scope = scope;
    v->via = via;
  } else {
    /* a raise skipped the body's release: the kept tape is this call's
    ** (a nested call takes a fresh one while it is busy) */
    if (v->tape != NULL && v->tape->busy) jc_tape_release(v->tape);
    if (v->closing) jc_validator_free(L, v);
  }
  if (st != 0) return lua_error(L);
  return lua_gettop(L) - base;
}

/* The body of validate under jc_v_call: 1 self, 2 value, 3 its jc_vcall.
** [-0, +1|2, e] */
static int jc_validate_body(lua_State *L) {
  jc_vcall *c = (jc_vcall *)lua_touserdata(L, 3);
  jc_validator *v = c->v;
  jc_tape *t = c->tape;
  size_t depth = 0;
  long budget;
  int r, n;
  /* closed by a __gc run before the mark was set (option reading) */
  if (v->root == NULL) return luaL_error(L, "validator is closed");
  lua_settop(L, 2);
  if (t != NULL) {            /* a tape from core.parse: validated as it is */
    n = jc_run(L, v, t, &c->o, 0);
  } else {
    t = jc_v_tape(L, v);                  /* may push its anchor */
    budget = v->work_budget > 0 && v->work_budget < (double)JC_WORK_BUDGET
                 ? (long)v->work_budget : (long)JC_WORK_BUDGET;
    r = jc_tape_write_lua(L, t, 2, (size_t)v->max_depth, v->segs, &depth,
                          &budget);
    n = jc_run(L, v, t, &c->o, r == 1 ? (int)depth : r == 2 ? -1 : 0);
    jc_tape_release(t);
  }
  if (n == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  return n;
}

static int jc_schema_validate(lua_State *L) {
  int top = lua_gettop(L);
  jc_validator *v = jc_self(L);
  jc_optval ov[4];
  jc_vcall c;
  luaL_argcheck(L, v->root != NULL && !v->closing, 1, "validator is closed");
  luaL_argcheck(L, top >= 2, 2, "value expected");
  luaL_argcheck(L, top <= 3, 4, "no more than 2 arguments expected");
  memset(&c, 0, sizeof c);
  c.v = v;
  if (top == 3) {             /* no options: nothing to read (per call) */
    jc_opts_read(L, 3, jc_validate_opts, ov);
    lua_settop(L, 2);
    c.o.first = ov[0].set && ov[0].b;
    c.o.basic = ov[1].set;
    c.o.max_errors = ov[3].set ? (int)ov[3].n : JC_MAX_ERRORS;
  } else {
    c.o.first = c.o.basic = 0;
    c.o.max_errors = JC_MAX_ERRORS;
  }
  if (lua_type(L, 2) == LUA_TUSERDATA && lua_getmetatable(L, 2)) {
    if (lua_topointer(L, -1) == v->tmt)
      c.tape = (jc_tape *)lua_touserdata(L, 2);
    lua_pop(L, 1);
  }
  /* a tape from core.parse: validated as it is */
  if (c.tape != NULL) luaL_argcheck(L, c.tape->n > 0, 2, "empty tape");
  /* most tapes are valid, and their verdict needs no state: then no pcall
  ** and no scratch (a nested call, from a __gc inside a walk of 'v', takes
  ** the way below, which gives it scratch of its own); anything else is
  ** walked again below, which reports */
  if (c.tape != NULL && !c.o.basic && !v->busy &&
      jc_verdict_nolua(v, c.tape) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  return jc_v_call(L, &c, JC_UP_VALIDATE);
}

/* check's options; check_json's are the same and then 'value' (index 5) */
#define JC_CHECK_OPTS \
  { "first", JC_OPT_BOOL, 0, 0, "a boolean", NULL }, \
  { "max_errors", JC_OPT_INT, 0, 1e9, "an integer from 0 to 1e9", NULL }, \
  JC_PARSE_OPTS, \
  { "keep_order", JC_OPT_BOOL, 0, 0, "a boolean", NULL }
static const jc_opt jc_check_opts[] = {
  JC_CHECK_OPTS, { NULL, 0, 0, 0, NULL, NULL }
};
static const jc_opt jc_check_json_opts[] = {
  JC_CHECK_OPTS, { "value", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/* Push the accepted text at stack index 2 without the JSON whitespace
** (RFC 8259 §2: space, tab, LF, CR) around its one value; the same string
** when there is none, so the common reply costs no copy. [-0, +1, m] */
static void jc_push_trimmed(lua_State *L, const char *text, size_t len) {
  size_t b = 0, e = len;
  while (b < e && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n'
                   || text[b] == '\r'))
    b++;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t'
                   || text[e - 1] == '\n' || text[e - 1] == '\r'))
    e--;
  if (b == 0 && e == len) lua_pushvalue(L, 2);
  else lua_pushlstring(L, text + b, e - b);
}

/* The body of check and check_json under jc_v_call: 1 self, 2 text, 3
** its jc_vcall. Parse the text to the validator's tape, validate it
** there; on success push the Lua value (check), or the accepted text and,
** with opts.value, the Lua value after it (check_json). Returns the number
** of results (an err pushes nil, err). [-0, +1|2, e] */
static int jc_check_body(lua_State *L) {
  jc_vcall *c = (jc_vcall *)lua_touserdata(L, 3);
  jc_validator *v = c->v;
  jc_tape *t;
  size_t len;
  const char *text;
  int r;
  /* closed by a __gc run before the mark was set (option reading) */
  if (v->root == NULL) return luaL_error(L, "validator is closed");
  text = lua_tolstring(L, 2, &len);
  if (c->parsed) {            /* parsed by jc_check_json_quick, still busy */
    t = v->tape;
    r = 0;
  } else {
    t = jc_v_tape(L, v);                  /* may push its anchor */
    r = jc_parse_tape(L, t, text, len, c->max_depth, c->max_bytes);
  }
  if (r == 0) {
    r = jc_run(L, v, t, &c->o, 0);
    if (r == 0) {
      int keep = 0;
      if (c->value) {
        /* member names the walk matched to declared properties come from
        ** the keep table, already interned; it stays below the results */
        lua_rawgeti(L, LUA_REGISTRYINDEX, v->keep_ref);
        keep = lua_gettop(L);
      }
      if (c->json) {
        jc_push_trimmed(L, text, len);
        r++;
      }
      if (c->value) {
        jc_tape_push_lua(L, t, 0, c->keep_order, keep, 0);
        r++;
      }
    }
  }
  jc_tape_release(t);
  return r;                   /* from the top: the anchor is left below */
}

/* check_json(text) with no options, the common call, with no protected
** call and no options work: the strict parse into the validator's kept
** tape, then the verdict that needs no state (jc_verdict_nolua). Nothing
** in it runs Lua code or a collector step (the parse allocates through
** the state's allocator function alone, the verdict not at all), so no
** finalizer can call or close 'v' meanwhile, and the only raise is the
** parse's "not enough memory", the same error the protected call would
** rethrow; it leaves the kept tape marked busy, and the next call through
** jc_v_call releases it. Returns 1 with the accepted text pushed when the
** text is valid JSON and valid; 2 (the verdict needs the state's
** scratch) or 3 (not valid), nothing pushed, when the text parsed but is
** not known valid: the tape stays busy and jc_check_body walks it under
** the protected call (which jc_v_call reaches with no allocation, so the
** tape is as left here), reporting at once for 3;
** 0, nothing pushed, when the text is not JSON or the tape is in use or
** not made yet: jc_check_body parses again and reports. [-0, +0|1, m] */
static int jc_check_json_quick(lua_State *L, jc_validator *v,
                               const char *text, size_t len) {
  jc_tape *t = v->tape;
  int r;
  if (v->busy || t == NULL || t->busy) return 0;
  t->busy = 1;                /* released tapes are reset (jc_tape_release) */
  if (jc_parse_tape_quiet(L, t, text, len, JC_MAX_DEPTH, JC_MAX_BYTES) != 0) {
    jc_tape_release(t);
    return 0;
  }
  r = jc_verdict_nolua(v, t);
  if (r != 0) return r == 1 ? 3 : 2;
  jc_tape_release(t);
  jc_push_trimmed(L, text, len);
  return 1;
}

/* check and check_json: read the options, then jc_check_body under
** jc_v_call ('json' 1: check_json). [-0, +1|2, e] */
static int jc_check_text(lua_State *L, int json) {
  jc_validator *v = jc_self(L);
  jc_vcall c;
  int top = lua_gettop(L);
  luaL_argcheck(L, v->root != NULL && !v->closing, 1, "validator is closed");
  luaL_checktype(L, 2, LUA_TSTRING);
  luaL_argcheck(L, top <= 3, 4, "no more than 2 arguments expected");
  memset(&c, 0, sizeof c);
  if (json && top == 2) {
    size_t len;
    const char *text = lua_tolstring(L, 2, &len);
    int q = jc_check_json_quick(L, v, text, len);
    if (q == 1) return 1;
    c.parsed = q >= 2;
    c.o.invalid = q == 3;
  }
  c.v = v;
  c.json = json;
  c.value = !json;
  c.o.max_errors = JC_MAX_ERRORS;
  c.max_depth = JC_MAX_DEPTH;
  c.max_bytes = JC_MAX_BYTES;
  if (top == 3) {             /* none given: no options work at all */
    jc_optval ov[6];
    ov[5].set = 0;
    jc_opts_read(L, 3, json ? jc_check_json_opts : jc_check_opts, ov);
    c.o.first = ov[0].set && ov[0].b;
    if (ov[1].set) c.o.max_errors = (int)ov[1].n;
    if (ov[2].set) c.max_depth = (size_t)ov[2].n;
    if (ov[3].set) c.max_bytes = (size_t)ov[3].n;
    c.keep_order = ov[4].set && ov[4].b;
    c.value = !json || (ov[5].set && ov[5].b);
  }
  return jc_v_call(L, &c, JC_UP_CHECK);
}

/*
** validator:check(text [, opts]) -> value | nil, err
** The format and schema gates in one C call: 'text' is parsed strictly
** into a tape (as core.decode does), validated on the tape, and only
** when it is valid is the Lua value built (as core.decode builds it), so
** a rejected reply never costs a Lua table.
**   text   string: the JSON text
**   opts   table or nil: first, max_errors (as validate), max_depth
**          (integer 1..3000, default 1000) and max_bytes (integer >= 0,
**          default 64 MiB) as core.decode, keep_order (boolean, as
**          core.decode)
** Returns the value, or nil and err: a format err exactly as core.decode
** returns it, or a schema err as validate returns it whose error items
** also carry offset (0-based byte), line and column (1-based, column in
** UTF-8 characters) of the failing value in 'text'.
** Raises on misuse: a closed validator, 'text' not a string, an unknown
** option. Reentrant as validate. Stack: [-0, +1|2, e]
*/
static int jc_schema_check(lua_State *L) {
  return jc_check_text(L, 0);
}

/*
** validator:check_json(text [, opts]) -> json [, value] | nil, err
** The same gates as validator:check, with the same verdicts and errors,
** but the answer is the accepted JSON text, not a Lua value: no Lua table
** is built (a gateway that answers with JSON needs none, and building it
** costs more than parsing and validating). Numbers keep their spelling, so
** integers beyond 2^53 stay exact.
**   text   string: the JSON text
**   opts   table or nil: check's options, and value (boolean, default
**          false: also build and return the Lua value, as check does, for
**          a caller that needs both, e.g. to run rules on it)
** Returns 'text' itself without the JSON whitespace around the value (the
** same string when there is none; a new one otherwise), then the value
** when opts.value; or nil and err exactly as validator:check.
** Raises on misuse as validator:check. Stack: [-0, +1|2, e]
*/
static int jc_schema_check_json(lua_State *L) {
  return jc_check_text(L, 1);
}

/*
** validator:close() -> nothing
** Frees the compiled schema now (the keep table; __gc does the same);
** idempotent. Later validate/check calls raise "validator is closed".
** Called while a validate/check of this validator runs (by a __gc inside
** that call), the validator is closed at once for new calls but the free
** waits for the running call's end, which completes normally.
** Stack: [-0, +0, -]
*/
static int jc_schema_close(lua_State *L) {
  jc_self(L);
  return jc_validator_gc(L);
}

static const luaL_Reg jc_validator_methods[] = {
  { "validate", jc_schema_validate },
  { "check", jc_schema_check },
  { "check_json", jc_schema_check_json },
  { "close", jc_schema_close },
  { NULL, NULL }
};

static const luaL_Reg jc_validator_meta[] = {
  { "__gc", jc_validator_gc },
  { "__tostring", jc_validator_tostring },
  { NULL, NULL }
};

/*
** core.metaschema(uri) -> table | nil
** The built-in standard meta-schema at 'uri' (string; a trailing '#' is
** ignored), decoded as core.decode decodes, a new table on every call:
** http://json-schema.org/draft-04/schema, .../draft-06/schema,
** .../draft-07/schema, https://json-schema.org/draft/2019-09/schema and
** https://json-schema.org/draft/2020-12/schema, and the vocabulary
** meta-schemas of the last two (.../meta/core, applicator, validation,
** ...). nil for any other URI. compile resolves a $ref to any of them
** without a loader (before calling one), as ajv and python-jsonschema do.
** Raises: 'uri' not a string; memory errors.
** Stack: [-0, +1, m]
*/
static int jc_schema_metaschema(lua_State *L) {
  size_t len;
  const char *uri = luaL_checklstring(L, 1, &len);
  if (!jc_push_metaschema(L, uri, len)) lua_pushnil(L);
  return 1;
}

static const luaL_Reg jc_schema_funcs[] = {
  { "compile", jc_schema_compile },
  { "metaschema", jc_schema_metaschema },
  { NULL, NULL }
};

void jc_schema_open(lua_State *L) {
  if (luaL_newmetatable(L, JC_VALIDATOR_MT)) {
    luaL_setfuncs(L, jc_validator_meta, 0);
    lua_pushliteral(L, JC_VALIDATOR_MT);
    lua_setfield(L, -2, "__name");
    lua_newtable(L);
    lua_pushvalue(L, -2);   /* upvalue 1: the metatable, for jc_self */
    lua_pushcfunction(L, jc_validate_body);   /* JC_UP_VALIDATE */
    lua_pushcfunction(L, jc_check_body);      /* JC_UP_CHECK */
    luaL_setfuncs(L, jc_validator_methods, 3);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  jc_tape_new(L);   /* the Tape metatable exists for compile (v->tmt) */
  lua_pop(L, 1);
  luaL_setfuncs(L, jc_schema_funcs, 0);
}
