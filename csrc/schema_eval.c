/*
** schema_eval.c: the validator. It walks the tape (tape.h) of one instance
** against the compiled nodes; no Lua API call on its hot path.
*/
#include "schema.h"

#include <limits.h>

/* 'n' zeroed entries on the scratch stack; returns their offset (valid
** until popped with 'jc_stk_pop'; the stack may move: use offsets).
** [-0, +0, m] */
static size_t jc_stk_grow(jc_vctx *c, size_t n);

static JC_INLINE size_t jc_stk_push(jc_vctx *c, size_t n) {
  size_t base = c->stk_n, k;
  if (n > c->stk_cap - c->stk_n) return jc_stk_grow(c, n);
  for (k = 0; k < n; k++) c->stk[base + k] = 0;   /* a few: no memset call */
  c->stk_n += n;
  return base;
}

void jc_vslots(jc_vctx *c) {
  lua_State *L = c->L;
  int above = lua_gettop(L) > c->base, k;
  luaL_checkstack(L, 24, "jsoncontract.validate");
  for (k = 0; k < 4; k++) {
    lua_pushnil(L);
    if (above) lua_insert(L, c->base + 1);   /* under the walk's own */
  }
  c->slots = 1;
}

/* jc_stk_push when the stack must grow. [-0, +0, m] */
static JC_NOINLINE size_t jc_stk_grow(jc_vctx *c, size_t n) {
  size_t base = c->stk_n;
  if (c->L == NULL) {         /* jc_verdict_nolua: redone with a state */
    c->abort = JC_ABORT_STATE;
    return 0;                 /* no room: the callers check c->abort */
  }
  JC_SLOTS(c);
  {
    size_t cap = c->stk_cap;
    size_t *ns;
    while (cap - c->stk_n < n) {
      if (cap > ((size_t)-1) / 4 / sizeof(size_t))
        luaL_error(c->L, "not enough memory");
      cap *= 2;
    }
    ns = (size_t *)jc_newuserdata(c->L, cap * sizeof(size_t));   /* boxed */
    if (c->stk_n > 0) memcpy(ns, c->stk, c->stk_n * sizeof(size_t));
    lua_replace(c->L, c->stk_slot);
    c->stk = ns;
    c->stk_cap = cap;
  }
  memset(c->stk + base, 0, n * sizeof(size_t));
  c->stk_n += n;
  return base;
}

/* Push value 'ref' of the keep table (fetched into its slot on first use:
** only error reports need it). [-0, +1, m] */
static void jc_keep_get(jc_vctx *c, int ref) {
  JC_SLOTS(c);
  if (lua_isnil(c->L, c->keep)) {
    lua_rawgeti(c->L, LUA_REGISTRYINDEX, c->v->keep_ref);
    lua_replace(c->L, c->keep);
  }
  lua_rawgeti(c->L, c->keep, ref);
}

static size_t jc_memo_pos(const jc_node *n, size_t i, size_t mask) {
  jc_u64 h = (jc_u64)(size_t)n * 0x9E3779B97F4A7C15ULL ^
             (jc_u64)i * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 29;
  return (size_t)h & mask;
}

/* The remembered result of 'n' on entry 'i', or -1. */
static int jc_memo_get(const jc_vctx *c, const jc_node *n, size_t i) {
  size_t mask, pos;
  if (c->memo_n == 0) return -1;
  mask = c->memo_cap - 1;
  pos = jc_memo_pos(n, i, mask);
  while (c->memo[pos].n != NULL) {
    if (c->memo[pos].n == n && c->memo[pos].i == i) return c->memo[pos].r;
    pos = (pos + 1) & mask;
  }
  return -1;
}

/* Remember 'r' for 'n' on entry 'i'. [-0, +0, m] */
static void jc_memo_put(jc_vctx *c, const jc_node *n, size_t i, int r) {
  size_t mask, pos;
  if (c->memo_n >= JC_MEMO_MAX) return;
  if ((c->memo_n + 1) * 2 > c->memo_cap) {
    size_t cap = c->memo_cap ? c->memo_cap * 2 : 64, k;
    jc_memo *old = c->memo, *nm;
    if (c->L == NULL) {       /* jc_verdict_nolua: redone with a state */
      c->abort = JC_ABORT_STATE;
      return;
    }
    JC_SLOTS(c);
    nm = (jc_memo *)jc_newuserdata(c->L, cap * sizeof(jc_memo));
    memset(nm, 0, cap * sizeof(jc_memo));
    mask = cap - 1;
    for (k = 0; k < c->memo_cap; k++) {
      if (old[k].n == NULL) continue;
      pos = jc_memo_pos(old[k].n, old[k].i, mask);
      while (nm[pos].n != NULL) pos = (pos + 1) & mask;
      nm[pos] = old[k];
    }
    lua_replace(c->L, c->memo_slot);
    c->memo = nm;
    c->memo_cap = cap;
  }
  mask = c->memo_cap - 1;
  pos = jc_memo_pos(n, i, mask);
  while (c->memo[pos].n != NULL) {
    if (c->memo[pos].n == n && c->memo[pos].i == i) {
      c->memo[pos].r = r;
      return;
    }
    pos = (pos + 1) & mask;
  }
  c->memo[pos].n = n;
  c->memo[pos].i = i;
  c->memo[pos].r = r;
  c->memo_n++;
}

/* A regex search charged to the work budget. */
static JC_INLINE int jc_match(jc_vctx *c, const jc_node *n,
                              const jc_pattern *re, const char *s,
                              size_t len) {
  int rc;
  c->work -= 1.0 + (double)(len >> 4);
  rc = c->t->text != NULL   /* parsed text: UTF-8 checked by the parser */
       ? jc_pattern_match_utf8(re, c->v->matcher, s, len)
       : jc_pattern_match(re, c->v->matcher, s, len);
  if (JC_PATTERN_OVER(rc)) c->work -= JC_WORK_REGEX_LIMIT;
  if (c->work < 0) jc_over(c, n);
  return rc;
}

/* Does the value (entry 'x') satisfy the 'type' of 'n' (true without
** one)? By the node's table by kind; 'integer' asks the number. */
static JC_INLINE int jc_type_ok(const jc_node *n, const jc_tv *x) {
  unsigned op = n->leaf[x->kind & 7];
  return (op & JC_LEAF_TYPE) != 0 ||
         ((op & JC_LEAF_INT) != 0 &&
          ((x->flags & JC_TF_INT) != 0 || jc_tv_integral(x)));
}
/* jc_enum_has by hash, every member when the value is too big to hash
** whole. Returns the member's index + 1, 0 when none is equal. */
static JC_NOINLINE size_t jc_enum_hashed(jc_vctx *c, const jc_node *n,
                                         size_t i) {
  long budget = JC_HASH_BUDGET;
  jc_u64 h;
  size_t lo = 0, hi = n->nenum, k;
  h = jc_tv_hash(c->t, i, &budget);
  if (budget < 0) {
    for (k = 0; k < n->nenum; k++)
      if (jc_tv_equal(c->t, i, n->enum_tape, n->enum_roots[k])) return k + 1;
    return 0;
  }
  while (lo < hi) {               /* first pair with hash >= h */
    size_t mid = lo + (hi - lo) / 2;
    if (n->enum_hash[2 * mid] < h) lo = mid + 1;
    else hi = mid;
  }
  for (k = lo; k < n->nenum && n->enum_hash[2 * k] == h; k++)
    if (jc_tv_equal(c->t, i, n->enum_tape,
                    n->enum_roots[n->enum_hash[2 * k + 1]]))
      return (size_t)n->enum_hash[2 * k + 1] + 1;
  return 0;
}

/* A string of a parsed text (not escaped) equal to member 'k' of the enum
** of 'n' is marked as jc_mark_name marks names: check builds its Lua value
** from the kept string instead of interning it again. */
static JC_INLINE void jc_mark_member(jc_vctx *c, const jc_node *n,
                                     size_t i, size_t k) {
  jc_tv *x = (jc_tv *)&c->t->v[i];
  if (c->names && x->kind == JT_STRING && !(x->flags & JC_TF_ESC)
      && n->enum_names[k] != 0) {
    x->n = (unsigned)n->enum_names[k];
    x->flags |= JC_TF_NAME;
  }
}

/* jc_enum_has of what its in-line scan does not take: a string in an
** enum of more than 16 members by the table of its string members
** (jc_node.enum_shash), any other value of such an enum, and anything but
** a string, by hash (jc_enum_hashed); a string past 16 bytes compared
** with each string member. Out of line: the common case keeps no frame
** for it. */
static JC_NOINLINE int jc_enum_has_slow(jc_vctx *c, const jc_node *n,
                                        size_t i) {
  const jc_tv *x = &c->t->v[i];
  size_t k;
  if (x->kind == JT_STRING && n->enum_shash != NULL) {
    jc_u64 wa, wb;
    size_t len = x->u.len, pos;
    jc_name_words(x->s, len, &wa, &wb);
    pos = jc_name_hash(wa, wb, len, 0) & n->enum_smask;
    while (n->enum_shash[pos] != 0) {
      const jc_estr *m = &n->enum_strs[n->enum_shash[pos] - 1];
      if (m->len == len && m->wa == wa && m->wb == wb &&
          (len <= 16 || jc_bytes_eq(m->s, x->s, len))) {
        jc_mark_member(c, n, i, m->k);
        return 1;
      }
      pos = (pos + 1) & n->enum_smask;
    }
    return 0;
  }
  if (x->kind != JT_STRING || n->nenum > 16) {
    k = jc_enum_hashed(c, n, i);
    if (k == 0) return 0;
    jc_mark_member(c, n, i, k - 1);
    return 1;
  }
  for (k = 0; k < n->nenum_strs; k++) {
    const jc_estr *m = &n->enum_strs[k];
    if (m->len == x->u.len && jc_bytes_eq(m->s, x->s, x->u.len)) {
      jc_mark_member(c, n, i, m->k);
      return 1;
    }
  }
  return 0;
}

/* Is 'i' in the enum of 'n'? A string of up to 16 bytes among up to 16
** members is compared with each string member, in line, by length and
** the words of jc_name_words (equal words are equal bytes at that
** length): below the cost of hashing it (measured on the 1 KB ticket's
** enums of 4 to 9 members: 180 instructions a lookup by hash, 100
** through the tape, 60 by words); the rest in jc_enum_has_slow. */
static JC_INLINE int jc_enum_has(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tv *x = &c->t->v[i];
  const jc_estr *m, *end;
  size_t len;
  jc_u64 wa, wb;
  if (x->kind != JT_STRING || n->nenum > 16 || x->u.len > 16)
    return jc_enum_has_slow(c, n, i);
  /* no string member (enum_strs is NULL for "enum": []): none equal, and
  ** no arithmetic on a null pointer, which is undefined even adding 0 */
  if (n->nenum_strs == 0) return 0;
  len = x->u.len;
  jc_name_words(x->s, len, &wa, &wb);
  for (m = n->enum_strs, end = m + n->nenum_strs; m < end; m++) {
    if (m->len == len && m->wa == wa && m->wb == wb) {
      jc_mark_member(c, n, i, m->k);
      return 1;
    }
  }
  return 0;
}

static int jc_eval_array(jc_vctx *c, const jc_node *n, size_t i, int room);
static int jc_eval_string(jc_vctx *c, const jc_node *n, size_t i);

/* Must a string of 'len' bytes have its characters counted to decide
** minLength/maxLength? A UTF-8 character is 1 to 4 bytes, so
** len/4 <= characters <= len settles most bounds without counting. */
#define jc_len_needs_count(n, len) \
  (((n)->min_len != ABSENT && ((len) + 3) / 4 < (n)->min_len) || \
   ((n)->max_len != ABSENT && (len) > (n)->max_len))
static int jc_number_ok(const jc_node *n, const jc_tv *x);

/* minLength/maxLength of 'n' on string 'x' by its characters, when
** jc_len_needs_count says its bytes do not settle them. */
static JC_NOINLINE int jc_chars_ok(const jc_node *n, const jc_tv *x) {
  size_t chars = jc_utf8_chars(x->s, x->u.len);
  return !((n->min_len != ABSENT && chars < n->min_len) ||
           (n->max_len != ABSENT && chars > n->max_len));
}
static int jc_string_ok(jc_vctx *c, const jc_node *n, size_t i,
                        const jc_tv *x);
static int jc_vfast(jc_vctx *c, const jc_node *n, size_t i, int room);
static int jc_vfast_out(jc_vctx *c, const jc_node *n, size_t i);

/* Does the child value 'x' pass 'n' on sight (jc_node.pass)? Then it
** costs the work unit jc_eval would charge, and nothing else: no
** location is kept, no call made. Not when anything could fail: the
** walk unwinding, the depth bounds, the budget. */
static JC_INLINE int jc_pass_bits(jc_vctx *c, unsigned p, const jc_tv *x) {
  if ((p & (1u << x->kind)) == 0 || c->abort || c->depth >= c->max_depth ||
      c->edepth >= JC_SCHEMA_MAX_EVAL || c->work < 1.0)
    return 0;
  if (!(p & JC_PASS_FREE)) c->work -= 1.0;
  return 1;
}
#define jc_pass(c, n, x) jc_pass_bits((c), (n)->pass, (x))

/* Is 'x' a scalar under a schema of only type, enum and its type's
** keywords (most leaves of real schemas)? Then 'jc_scalar_ok' decides it
** without the interpreter's call. */
#define JC_SCALAR_KINDS ((1u << JT_NULL) | (1u << JT_BOOLEAN) | \
                         (1u << JT_NUMBER) | (1u << JT_STRING))
#define jc_scalar_leaf(n, x) \
  (((n)->kw & ~(KW_ENUM | KW_STR | KW_NUM)) == 0 && (n)->boolean < 0 && \
   ((1u << (x)->kind) & JC_SCALAR_KINDS) != 0)

/* The verdict of such a leaf 'n' on 'x' (entry 'i'), quiet: the caller
** has c->quiet > 0 and charges the work unit. */
static JC_INLINE int jc_scalar_ok(jc_vctx *c, const jc_node *n, size_t i,
                                  const jc_tv *x) {
  unsigned op = n->leaf[x->kind & 7];   /* type, enum, then the kind's */
  if (!jc_type_ok(n, x)) return 0;
  if ((op & JC_LEAF_ENUM) && !jc_enum_has(c, n, i)) return 0;
  if (op & JC_LEAF_LEN)
    return !jc_len_needs_count(n, x->u.len) || jc_chars_ok(n, x);
  if (op & JC_LEAF_STR) return jc_string_ok(c, n, i, x);
  if (op & JC_LEAF_NUM) return jc_number_ok(n, x);
  return 1;
}

/* Is the walk in the verdict pass outside any applicator (jc_run)? There
** nothing is reported and no memo kept: 'jc_vchild' and 'jc_vfast'. */
#define jc_vmode(c) ((c)->qbase && (c)->quiet == (c)->qbase)

/* 'jc_child' in the verdict pass: no location kept, a leaf decided on the
** spot, a plain subschema by 'jc_vfast'; a bound hit only stops the walk
** (jc_too_deep and jc_over report nothing in this pass). */
static int jc_vchild(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tv *x = &c->t->v[i];
  int ok;
  if (n->jump != NULL) n = n->jump;     /* c->nvia < 0 in this pass */
  if (c->depth >= c->max_depth) {
    c->abort = 1;                       /* jc_too_deep */
    return 0;
  }
  if (jc_scalar_leaf(n, x) && c->work >= 1.0 && !c->abort &&
      !c->v->dynamic) {
    ok = jc_scalar_ok(c, n, i, x);
    if (ok) c->work -= 1.0;
    return ok;
  }
  c->depth++;
  ok = n->vfast && !c->abort ? jc_vfast(c, n, i, 0) : jc_eval(c, n, i);
  c->depth--;
  return ok;
}

/* jc_vchild of a child that is neither passed nor a leaf, from a
** container whose jc_vroom held (jc_sibling): the walk is not stopped,
** the depth and evaluation bounds have room (children leave them as they
** found them), so only the work budget is left to check. Inside an
** applicator a subschema goes to jc_eval, which keeps the memo. */
static JC_NOINLINE int jc_vdeeper(jc_vctx *c, const jc_node *n, size_t i) {
  int ok;
  if (n->jump != NULL) n = n->jump;     /* c->nvia < 0 in this pass */
  c->depth++;
  ok = n->vfast && c->quiet == c->qbase ? jc_vfast(c, n, i, 1)
                                         : jc_eval(c, n, i);
  c->depth--;
  return ok;
}

/* Evaluate 'n' on the child entry 'i' (member 'key' or array 'index'),
** one level deeper, when 'jc_pass' did not decide it. */
static int jc_child(jc_vctx *c, const jc_node *n, size_t i, const char *key,
                    size_t len, size_t index) {
  int ok;
  jc_seg *s;
  const jc_tv *x;
  if (jc_vmode(c)) return jc_vchild(c, n, i);
  if (n->jump != NULL && c->nvia < 0) n = n->jump;
  if (c->depth >= c->v->max_depth) {
    size_t saved = c->cur;
    s = &c->v->segs[c->depth];
    s->key = key; s->len = len; s->index = index;
    c->depth++;
    c->cur = i;
    jc_too_deep(c, n, "value", c->v->max_depth);
    c->cur = saved;
    c->depth--;
    return 0;
  }
  if (!c->qbase) {            /* the verdict pass reports nothing */
    s = &c->v->segs[c->depth];
    s->key = key; s->len = len; s->index = index;
  }
  c->depth++;
  x = &c->t->v[i];
  /* A leaf is decided here, quietly, with the same work unit as jc_eval
  ** charges. A failure goes the whole way below, which reports it (the
  ** position is set as jc_eval sets it, for a budget error inside a
  ** regex). */
  if (jc_scalar_leaf(n, x) && c->work >= 1.0 && !c->abort &&
      !c->v->dynamic) {
    size_t saved = c->cur;
    c->cur = i;
    c->quiet++;
    ok = jc_scalar_ok(c, n, i, x);
    c->quiet--;
    c->cur = saved;
    if (ok || c->abort || c->qbase) {   /* the verdict pass: no report */
      if (ok) c->work -= 1.0;
      c->depth--;
      return ok;
    }
  }
  ok = jc_eval(c, n, i);
  c->depth--;
  return ok;
}

/* 'jc_child' unless 'jc_pass' decides. */
static int jc_eval_child(jc_vctx *c, const jc_node *n, size_t i,
                         const char *key, size_t len, size_t index) {
  if (jc_pass(c, n, &c->t->v[i])) return 1;
  return jc_child(c, n, i, key, len, index);
}

/* Can the children of a container be taken by 'jc_sibling' in the
** verdict pass (inside applicators too: a pass or a leaf is decided as
** jc_child would, quietly, and keeps no memo)? The walk not stopped,
** depth and evaluation bounds not reached: children leave these as they
** found them, and a failure ends the container's walk, so they hold for
** every child. */
#define jc_vroom(c) ((c)->qbase && !(c)->abort && \
                     (c)->depth < (c)->max_depth && \
                     (c)->edepth < JC_SCHEMA_MAX_EVAL && !(c)->v->dynamic)

/* jc_eval_child of a member or item under 'n' whose pass bits are 'pass'
** ('n->pass', or the copy in its jc_prop), at entry 'i' ('x'). With
** 'room' (jc_vroom of the parent) the bounds are known, so a pass or a
** leaf is decided here, in the caller's loop. */
static JC_HOT_INLINE int jc_sibling(jc_vctx *c, int room, unsigned pass,
                                    const jc_node *n, size_t i,
                                    const jc_tv *x, const char *key,
                                    size_t len, size_t index) {
  if (room && c->work >= 1.0) {
    unsigned b = pass >> x->kind;   /* the pass and leaf bits of its kind */
    if (b & 1u) {
      if (!(pass & JC_PASS_FREE)) c->work -= 1.0;
      return 1;
    }
    if (!(b & (1u << JC_LEAF_SHIFT))) return jc_vdeeper(c, n, i);
    if (!jc_scalar_ok(c, n->jump != NULL ? n->jump : n, i, x)) return 0;
    c->work -= 1.0;
    return 1;
  }
  if (jc_pass_bits(c, pass, x)) return 1;
  return jc_child(c, n, i, key, len, index);
}

/* A numeric bound as a tape number. */
static void jc_limit_tv(const jc_limit *lim, jc_tv *out) {
  memset(out, 0, sizeof *out);
  out->kind = JT_NUMBER;
  if (lim->isint) {
    out->flags = JC_TF_INT;
    out->u.i = lim->i;
    return;
  }
  if (lim->big != NULL) {
    out->flags = JC_TF_BIG;
    out->s = lim->big;
    out->n = lim->bign;
  }
  out->u.d = (double)lim->d;
}

/* Is the integer 'v' exact as a double (|v| <= 2^53)? */
#define JC_EXACT_DBL(v) ((v) >= -((long long)1 << 53) && \
                         (v) <= ((long long)1 << 53))

/* Compare number 'x' with bound 'lim' (-1, 0, 1), exactly. When both are
** exact as doubles (a double, or an integer within 2^53) the double
** comparison is the exact one, and two int64 compare as they are: no
** tape number is built. Big integers and int64 past 2^53 go to
** jc_tv_numcmp (out of line: the inline part is the common case). */
static JC_NOINLINE int jc_limit_cmp_exact(const jc_tv *x,
                                          const jc_limit *lim) {
  jc_tv l;
  jc_limit_tv(lim, &l);
  return jc_tv_numcmp(x, &l);    /* exact: int64 and digits as they are */
}

/* (A bound beyond int64, 'big', is never 'isint', and its double is 2^63
** or more in magnitude: against an integer within 2^53 the double
** comparison is the exact one; a double may round to the bound's own
** double, so it goes to jc_tv_numcmp with the rest.) */
static JC_HOT_INLINE int jc_limit_cmp(const jc_tv *x, const jc_limit *lim) {
  if ((x->flags & (JC_TF_INT | JC_TF_BIG)) == 0) {
    if (lim->big == NULL && (!lim->isint || JC_EXACT_DBL(lim->i)))
      return (x->u.d > lim->d) - (x->u.d < lim->d);
  } else if (x->flags & JC_TF_INT) {
    if (lim->isint) return (x->u.i > lim->i) - (x->u.i < lim->i);
    if (JC_EXACT_DBL(x->u.i)) {
      double a = (double)x->u.i;
      return (a > lim->d) - (a < lim->d);
    }
  }
  return jc_limit_cmp_exact(x, lim);
}

/* Does a number that compares 'cmp' (-1, 0, 1) with bound 'k' (LIM_MIN ..
** LIM_XMAX) fail it? JSON Schema validation 2020-12 §6.2.2-6.2.5. */
static JC_INLINE int jc_bound_fails(int cmp, int k) {
  return k == LIM_MIN ? cmp < 0 : k == LIM_MAX ? cmp > 0
       : k == LIM_XMIN ? cmp <= 0 : cmp >= 0;
}

static int jc_eval_number(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tv *x = &c->t->v[i];
  jc_tv lim;
  int ok = 1;
  static const char *const kws[4] = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"
  };
  static const char *const texts[4] = {
    "is less than minimum", "is greater than maximum",
    "is not greater than exclusive minimum",
    "is not less than exclusive maximum"
  };
  int k;
  for (k = LIM_MIN; k <= LIM_XMAX; k++) {
    if (!n->lim[k].set) continue;
    if (jc_bound_fails(jc_limit_cmp(x, &n->lim[k]), k)) {
      ok = 0;
      jc_report_limit(c, n, kws[k], texts[k], &n->lim[k]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_MULT].set) {
    jc_limit_tv(&n->lim[LIM_MULT], &lim);
    if (!jc_tv_multiple(x, &lim)) {
      ok = 0;
      jc_report_limit(c, n, "multipleOf", "is not a multiple of",
                      &n->lim[LIM_MULT]);
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

/* jc_eval_number's verdict alone (quiet: no report), exactly: the bounds
** by jc_limit_cmp, then multipleOf. */
static JC_NOINLINE int jc_number_exact(const jc_node *n, const jc_tv *x) {
  jc_tv lim;
  /* one test per bound, 'k' a constant in each: the compiler folds the rule */
#define JC_BOUND_OK(k) \
  (!n->lim[k].set || !jc_bound_fails(jc_limit_cmp(x, &n->lim[k]), k))
  if (!(JC_BOUND_OK(LIM_MIN) && JC_BOUND_OK(LIM_MAX) &&
        JC_BOUND_OK(LIM_XMIN) && JC_BOUND_OK(LIM_XMAX)))
    return 0;
#undef JC_BOUND_OK
  if (!n->lim[LIM_MULT].set) return 1;
  jc_limit_tv(&n->lim[LIM_MULT], &lim);
  return jc_tv_multiple(x, &lim);
}

/* jc_eval_number's verdict alone. A double, or an integer within 2^53,
** against bounds all exact as doubles and no multipleOf (jc_node.lim_dbl):
** the double comparisons are the exact ones (jc_limit_cmp), and an absent
** bound is NaN, which fails no test; the rest in jc_number_exact, whose
** frame the common case does not pay. */
static int jc_number_ok(const jc_node *n, const jc_tv *x) {
  double d;
  if (!n->lim_dbl) return jc_number_exact(n, x);
  if ((x->flags & (JC_TF_INT | JC_TF_BIG)) == 0) d = x->u.d;
  else if ((x->flags & JC_TF_INT) && JC_EXACT_DBL(x->u.i)) d = (double)x->u.i;
  else return jc_number_exact(n, x);
  return !(d < n->lim_d[LIM_MIN] || d > n->lim_d[LIM_MAX] ||
           d <= n->lim_d[LIM_XMIN] || d >= n->lim_d[LIM_XMAX]);
}

/* jc_eval_string's verdict alone (quiet: no report); a regex 'format'
** (checked by compiling it, on the Lua stack) goes to jc_eval_string. */
static int jc_string_ok(jc_vctx *c, const jc_node *n, size_t i,
                        const jc_tv *x) {
  size_t len = x->u.len, chars;
  if (n->format == JC_FMT_REGEX && c->v->format_assertion)
    return jc_eval_string(c, n, i);
  if (jc_len_needs_count(n, len)) {
    chars = jc_utf8_chars(x->s, len);
    if ((n->min_len != ABSENT && chars < n->min_len) ||
        (n->max_len != ABSENT && chars > n->max_len))
      return 0;
  }
  if (n->pattern != NULL &&
      (jc_match(c, n, n->pattern, x->s, len) != JC_PATTERN_MATCH || c->abort))
    return 0;
  return n->format == JC_FMT_NONE || !c->v->format_assertion ||
         jc_format_check(n->format, x->s, len);
}

static int jc_eval_string(jc_vctx *c, const jc_node *n, size_t i) {
  lua_State *L = c->L;
  const jc_tv *x = &c->t->v[i];
  const char *s = x->s;
  size_t len = x->u.len, chars;
  int ok = 1;
  if (jc_len_needs_count(n, len)) {
    chars = jc_utf8_chars(s, len);
    if (n->min_len != ABSENT && chars < n->min_len) {
      ok = 0;
      jc_report_count(c, n, "minLength", chars, "characters", "minimum",
                      n->min_len);
      if (JC_STOP(c)) return 0;
    }
    if (n->max_len != ABSENT && chars > n->max_len) {
      ok = 0;
      jc_report_count(c, n, "maxLength", chars, "characters", "maximum",
                      n->max_len);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->pattern != NULL) {
    int rc = jc_match(c, n, n->pattern, s, len);
    if (c->abort) return 0;
    if (rc != JC_PATTERN_MATCH) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "pattern");
        lua_pushstring(L, n->pattern_src);
        lua_setfield(L, -3, "pattern");
        if (rc == JC_PATTERN_NOMATCH) {
          jc_tv_push_render(L, c->t, i);
          lua_pushfstring(L, "%s %s does not match pattern %s", where,
                          lua_tostring(L, -1), n->pattern_src);
          lua_remove(L, -2);
        } else if (JC_PATTERN_OVER(rc)) {
          lua_pushfstring(L, "%s could not be checked against pattern %s: "
                          "%s", where, n->pattern_src, jc_pattern_why(rc));
        } else if (rc == JC_PATTERN_BADUTF) {
          lua_pushfstring(L, "%s is not valid UTF-8", where);
        } else {
          lua_pushfstring(L, "%s could not be checked against pattern %s",
                          where, n->pattern_src);
        }
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->format != JC_FMT_NONE && c->v->format_assertion) {
    int valid;
    if (n->format == JC_FMT_REGEX) {
      char msg[8];
      size_t off;
      c->work -= 1.0 + (double)len;
      if (L == NULL) {        /* jc_verdict_nolua: compiled on a stack */
        c->abort = JC_ABORT_STATE;
        return 0;
      }
      valid = jc_pattern_compile(L, s, len, msg, sizeof msg, &off) != NULL;
      lua_pop(L, 1);
    } else {
      valid = jc_format_check(n->format, s, len);
    }
    if (!valid) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "format");
        jc_tv_push_render(L, c->t, i);
        lua_pushfstring(L, "%s %s is not a valid %s", where,
                        lua_tostring(L, -1), n->format_name);
        lua_remove(L, -2);
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

/* jc_tv_equal_b of items 'a' and 'b' of tape 't', charged the same: two
** strings (most arrays under uniqueItems: tags, names) are compared here
** by length and bytes, without the call and its switch. */
static JC_INLINE int jc_item_equal(const jc_tape *t, size_t a, size_t b,
                                   long *budget) {
  const jc_tv *x, *y;
  a = jc_tv_deref(t, a);
  b = jc_tv_deref(t, b);
  x = &t->v[a];
  y = &t->v[b];
  if (a != b && x->kind == JT_STRING && y->kind == JT_STRING) {
    if (--*budget < 0) return 0;
    return x->u.len == y->u.len && jc_bytes_eq(x->s, y->s, x->u.len);
  }
  return jc_tv_equal_b(t, a, t, b, budget);
}

/* Find the first duplicate pair of the items of the array at entry 'a'
** (offset 'items' on the scratch stack holds their entries), as a
** pairwise scan would: the smallest 'i' whose value occurs again, then
** the smallest 'j' > 'i' with it (0-based). Returns 1 if found, -1 when
** the work budget ran out first (the comparisons are charged to it: items
** written from Lua may share tables, which expand to exponentially many
** paths). The slot table is a userdata popped before return. [-0, +0, m] */
static int jc_find_duplicate(jc_vctx *c, size_t items, size_t len,
                             size_t *di, size_t *dj) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  size_t i, j, cap = 4, mask, best_i = 0, best_j = 0;
  jc_uslot *slots;
  /* the budget left, as the comparisons count it (a long: 1e15 fits) */
  long wb = c->work <= 0 ? 0 : c->work >= (double)LONG_MAX ? LONG_MAX
                                                             : (long)c->work;
  long w0 = wb;
  if (len <= JC_UNIQUE_SMALL) {
    int r = 0;
    for (i = 0; i + 1 < len && r == 0 && wb >= 0; i++)
      for (j = i + 1; j < len; j++)
        if (jc_item_equal(t, c->stk[items + i], c->stk[items + j], &wb)) {
          *di = i;
          *dj = j;
          r = 1;
          break;
        } else if (wb < 0) {
          break;
        }
    c->work -= (double)(w0 - (wb < 0 ? 0 : wb));
    return wb < 0 ? -1 : r;
  }
  while (cap < len * 2) {
    if (cap > ((size_t)-1) / 2 / sizeof(jc_uslot))
      luaL_error(L, "not enough memory");
    cap *= 2;
  }
  mask = cap - 1;
  slots = (jc_uslot *)jc_newuserdata(L, cap * sizeof(jc_uslot));
  memset(slots, 0, cap * sizeof(jc_uslot));
  for (j = 0; j < len; j++) {
    jc_u64 h;
    size_t pos, rep = 0, e = c->stk[items + j];
    long budget = JC_HASH_BUDGET;
    h = jc_tv_hash(t, e, &budget);
    if (budget < 0)
      h = (jc_u64)t->v[jc_tv_deref(t, e)].kind * 0x9E3779B97F4A7C15ULL;
    wb -= JC_HASH_BUDGET - (budget < 0 ? 0 : budget);
    pos = (size_t)(h & (jc_u64)mask);
    while (slots[pos].item != 0 && wb >= 0) {
      if (slots[pos].h == h &&
          jc_tv_equal_b(t, c->stk[items + slots[pos].item - 1], t, e, &wb)) {
        rep = slots[pos].item;
        break;
      }
      pos = (pos + 1) & mask;
    }
    if (wb < 0) break;
    if (rep == 0) {
      slots[pos].h = h;
      slots[pos].item = j + 1;
    } else if (best_i == 0 || rep < best_i) {
      best_i = rep;
      best_j = j + 1;
      if (best_i == 1) break;   /* no smaller first item possible */
    }
  }
  lua_pop(L, 1);
  c->work -= (double)(w0 - (wb < 0 ? 0 : wb));
  if (wb < 0) return -1;
  if (best_i == 0) return 0;
  *di = best_i - 1;
  *dj = best_j - 1;
  return 1;
}

/* jc_find_duplicate of an array of up to JC_UNIQUE_SMALL strings of up to
** 16 bytes each (tags, codes: most arrays under uniqueItems), without the
** scratch stack: each string's length and words (jc_name_words: equal
** exactly when the bytes are) taken once, then the same pairwise scan,
** charged the same (one unit a pair). Returns as jc_find_duplicate, or -2
** when an item is anything else. */
static int jc_unique_strings(jc_vctx *c, size_t i, size_t len, size_t *di,
                             size_t *dj) {
  struct { jc_u64 wa, wb; size_t len; } w[JC_UNIQUE_SMALL];
  const jc_tv *tv = c->t->v;
  size_t j, k, end = tv[i].u.end;
  long wb, w0;
  int r = 0;
  if (len > JC_UNIQUE_SMALL) return -2;
  for (j = i + 1, k = 0; j < end; j++, k++) {   /* strings: one entry each */
    const jc_tv *y = &tv[j];
    if (y->kind != JT_STRING || y->u.len > 16) return -2;
    w[k].len = y->u.len;
    jc_name_words(y->s, y->u.len, &w[k].wa, &w[k].wb);
  }
  wb = w0 = c->work <= 0 ? 0 : c->work >= (double)LONG_MAX ? LONG_MAX
                                                            : (long)c->work;
  for (j = 0; j + 1 < len && r == 0 && wb >= 0; j++)
    for (k = j + 1; k < len; k++) {
      if (--wb < 0) break;
      if (w[j].len == w[k].len && w[j].wa == w[k].wa && w[j].wb == w[k].wb) {
        *di = j;
        *dj = k;
        r = 1;
        break;
      }
    }
  c->work -= (double)(w0 - (wb < 0 ? 0 : wb));
  return wb < 0 ? -1 : r;
}

/* uniqueItems of 'n' on the array at entry 'i' ('len' > 1 items).
** Returns 1 valid, 0 invalid (reported). Out of line: it keeps the frame
** of 'jc_eval_array' small. */
static JC_NOINLINE int jc_eval_unique(jc_vctx *c, const jc_node *n, size_t i,
                                      size_t len) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  size_t items, a, b, j, k, end = t->v[i].u.end;
  int dup = jc_unique_strings(c, i, len, &a, &b);
  if (dup == -2) {
    if (L == NULL && len > JC_UNIQUE_SMALL) {   /* its table is a userdata */
      c->abort = JC_ABORT_STATE;
      return 0;
    }
    items = jc_stk_push(c, len);
    if (c->abort == JC_ABORT_STATE) return 0;   /* jc_verdict_nolua */
    for (j = i + 1, k = 0; j < end; j = jc_tv_next(t, j), k++)
      c->stk[items + k] = j;
    dup = jc_find_duplicate(c, items, len, &a, &b);
    jc_stk_pop(c, items);
  }
  if (dup < 0) {                /* hostile: out of work budget */
    c->work = -1.0;
    jc_over(c, n);
    return 0;
  }
  if (!dup) return 1;
  if (!c->quiet) {
    const char *where = jc_err_begin(c, n, "uniqueItems");
    char sa[32], sb[32];
    snprintf(sa, sizeof sa, "%lu", (unsigned long)a);
    snprintf(sb, sizeof sb, "%lu", (unsigned long)b);
    lua_pushfstring(L, "%s has duplicate items at %s and %s", where, sa, sb);
    jc_err_end(c);
  }
  return 0;
}

/* The array keywords of 'n' on entry 'i'; 'room': jc_vroom holds. */
static int jc_eval_array(jc_vctx *c, const jc_node *n, size_t i, int room) {
  const jc_tape *t = c->t;
  const jc_tv *tv = t->v;    /* the walk never moves the tape */
  const jc_tv *x = &tv[i];
  size_t len = x->n, k, j, end = x->u.end;
  int ok = 1;
  if (n->min_items != ABSENT && len < n->min_items) {
    ok = 0;
    jc_report_count(c, n, "minItems", len, "items", "minimum", n->min_items);
    if (JC_STOP(c)) return 0;
  }
  if (n->max_items != ABSENT && len > n->max_items) {
    ok = 0;
    jc_report_count(c, n, "maxItems", len, "items", "maximum", n->max_items);
    if (JC_STOP(c)) return 0;
  }
  if (n->unique && len > 1 && !jc_eval_unique(c, n, i, len)) {
    ok = 0;
    if (JC_STOP(c)) return 0;
  }
  for (j = i + 1, k = 0; j < end && (k < n->nprefix || n->items != NULL);
       j = jc_tv_after(tv, j), k++) {
    const jc_node *sub = k < n->nprefix ? n->prefix[k] : n->items;
    if (!jc_sibling(c, room, sub->pass, sub, j, &tv[j], NULL, 0, k)) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

/* The value entry of member 'name' of the object at entry 'i', or 0. */
static size_t jc_obj_find(const jc_tape *t, size_t i, const char *name,
                          size_t len) {
  size_t j, end = t->v[i].u.end;
  for (j = i + 1; j < end; j = jc_tv_next(t, j + 1))
    if (t->v[j].u.len == len && memcmp(t->v[j].s, name, len) == 0)
      return j + 1;
  return 0;
}

static int jc_key_cmp(const void *x, const void *y) {
  const jc_key *a = (const jc_key *)x, *b = (const jc_key *)y;
  return jc_cmp_bytes(a->s, a->len, b->s, b->len);
}

/* patternProperties and additionalProperties of 'n' on member name entry
** 'k' (value k + 1); 'declared' 0: not in 'properties' (known), -1: look
** it up. Returns 1 valid, 0 invalid. */
static int jc_eval_member(jc_vctx *c, const jc_node *n, size_t k,
                          int declared) {
  const jc_tv *key = &c->t->v[k];
  size_t p;
  int ok = 1, matched = 0, r;
  for (p = 0; p < n->npprops; p++) {
    int rc = jc_match(c, n, n->pprops[p].re, key->s, key->u.len);
    if (c->abort) return 0;
    if (rc == JC_PATTERN_MATCH) {
      matched = 1;
      r = jc_eval_child(c, n->pprops[p].node, k + 1, key->s, key->u.len, 0);
    } else if (rc != JC_PATTERN_NOMATCH) {
      r = 0;
      if (!c->quiet) {
        jc_seg *s = &c->v->segs[c->depth];
        size_t saved = c->cur;
        s->key = key->s; s->len = key->u.len;
        c->depth++;
        c->cur = k + 1;
        jc_report(c, n, "patternProperties",
                  " could not be checked against pattern %s: %s",
                  n->pprops[p].src, jc_pattern_why(rc));
        c->cur = saved;
        c->depth--;
      }
    } else {
      continue;
    }
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  if (!matched && n->addl != NULL &&
      (declared == 0 ||
       (declared < 0 && jc_find_prop(n, key->s, key->u.len) == NULL))) {
    if (n->addl->boolean == 0) {
      r = 0;
      jc_report_extra(c, n, "additionalProperties", key->s, key->u.len, 0,
                      k + 1);
    } else {
      r = jc_eval_child(c, n->addl, k + 1, key->s, key->u.len, 0);
    }
    if (!r) ok = 0;
  }
  return ok;
}

/* Mark member name entry 'key' (declared as 'p') when the walk marks
** ('names', jc_vctx): its Lua string is kept, the builder reuses it
** (check). */
static JC_INLINE void jc_mark_name(int names, jc_tv *key, const jc_prop *p) {
  if (names && !(key->flags & JC_TF_ESC)) {
    key->n = (unsigned)p->name_ref;
    key->flags |= JC_TF_NAME;
  }
}

/* The member walk of jc_eval_object_quiet; inlined twice, with 'room'
** (jc_vroom) 1 and 0, so the verdict pass's loop, which decides leaves
** in place, and the applicators' loop are each compiled lean. */
static JC_HOT_INLINE int jc_object_members(jc_vctx *c, const jc_node *n,
                                           size_t i, int room) {
  const jc_tape *t = c->t;
  /* the entries in a local: the name marks below store into them, which
  ** would make the compiler load c->t->v again after each */
  jc_tv *tv = t->v;
  int names = c->names;
  size_t j, k, end = tv[i].u.end, req = 0, prev = 0;
  if (tv[i].n >= n->scan_from) {
    /* a few declared names and many members (an 'if' or an anyOf branch
    ** that tests one member, as real schemas do): the members other than
    ** the declared ones need nothing, so each declared name is looked for
    ** among the member names (by length first) instead of every member
    ** being hashed; the same evaluations, in declaration order */
    for (k = 0; k < n->nprops; k++) {
      const jc_prop *p = &n->props[k];
      jc_tv *key = NULL;
      for (j = i + 1; j < end; j = jc_tv_after(tv, j + 1)) {
        jc_u64 wa, wb;
        if (tv[j].u.len != p->len) continue;
        jc_name_words(tv[j].s, p->len, &wa, &wb);
        if (jc_prop_is(p, tv[j].s, p->len, wa, wb)) {
          key = &tv[j];
          break;
        }
      }
      if (key == NULL) {
        if (p->req) return 0;   /* a required name is missing */
        continue;
      }
      jc_mark_name(names, key, p);
      req += (size_t)p->req;
      if (!jc_sibling(c, room, p->pass, p->node, j + 1, &tv[j + 1], p->name,
                      p->len, 0))
        return 0;
    }
  } else if (n->npprops == 0 && n->nprops > 0) {
    /* the common shape (properties, additionalProperties or not, no
    ** patternProperties): jc_find_prop_next with what it reads from 'n'
    ** in locals, which the stores of the name marks would otherwise make
    ** the compiler load again for each member */
    const jc_prop *props = n->props;
    size_t *order = n->order, np = n->nprops;
    int addl = n->addl != NULL;
    for (j = i + 1; j < end; j = jc_tv_after(tv, j + 1)) {
      jc_tv *key = &tv[j];
      const char *s = key->s;
      size_t len = key->u.len, e = order[prev];
      const jc_prop *p;
      jc_u64 wa, wb;
      jc_name_words(s, len, &wa, &wb);
      if (e < np && jc_prop_is(&props[e], s, len, wa, wb)) {
        p = &props[e];
        prev = e + 1;
      } else {
        p = jc_find_prop_words(n, s, len, wa, wb);
        if (p == NULL) {
          if (addl && !jc_eval_member(c, n, j, 0)) return 0;
          continue;
        }
        order[prev] = (size_t)p->eidx;      /* learned for the next object */
        prev = (size_t)p->eidx + 1;
      }
      jc_mark_name(names, key, p);
      req += (size_t)p->req;
      if (!jc_sibling(c, room, p->pass, p->node, j + 1, &tv[j + 1], p->name,
                      p->len, 0))
        return 0;
    }
  } else
  for (j = i + 1; j < end; j = jc_tv_after(tv, j + 1)) {
    jc_tv *key = &tv[j];
    const jc_prop *p = n->nprops > 0
                           ? jc_find_prop_next(n, key->s, key->u.len, &prev)
                           : NULL;
    if (p != NULL) {
      jc_mark_name(names, key, p);
      req += (size_t)p->req;
      if (!jc_sibling(c, room, p->pass, p->node, j + 1, &tv[j + 1], p->name,
                      p->len, 0))
        return 0;
      if (n->npprops > 0 && !jc_eval_member(c, n, j, 1)) return 0;
    } else if ((n->npprops > 0 || n->addl != NULL) &&
               !jc_eval_member(c, n, j, 0)) {
      return 0;
    }
  }
  if (req != n->nreq_props) return 0;
  for (k = 0; k < n->nrequired && n->nreq_other > 0; k++)
    if (n->required[k].sidx < 0 &&
        jc_obj_find(t, i, n->required[k].name, n->required[k].len) == 0)
      return 0;
  return !c->abort;
}

/* The object keywords of 'n' on entry 'i' when quiet: only the verdict
** counts, so one pass in document order, stopping at the first failure:
** each member is looked up once and evaluated at once, the required
** names present are counted (members are unique). 'room': jc_vroom
** holds (a constant where it is inlined: jc_vdeeper). */
static JC_HOT_INLINE int jc_object_quiet(jc_vctx *c, const jc_node *n,
                                         size_t i, int room) {
  const jc_tv *x = &c->t->v[i];
  if ((n->min_props != ABSENT && x->n < n->min_props) ||
      (n->max_props != ABSENT && x->n > n->max_props))
    return 0;
  return room ? jc_object_members(c, n, i, 1)
              : jc_object_members(c, n, i, 0);
}

/* jc_object_quiet out of line. */
static JC_NOINLINE int jc_eval_object_quiet(jc_vctx *c, const jc_node *n,
                                            size_t i, int room) {
  return jc_object_quiet(c, n, i, room);
}

/* The object keywords of 'n' on entry 'i' when not quiet: in the order
** the errors are listed (required, properties, then the rest). */
static int jc_eval_object(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t j, k, count = x->n, end = x->u.end, slots = 0, known = 0;
  size_t unk = (size_t)-1, nunk = 0;
  int ok = 1;

  if (n->nprops > 0) {   /* one pass: each member's slot in props_sorted */
    slots = jc_stk_push(c, n->nprops);
    /* members not declared, listed for additionalProperties (no second
    ** lookup per member below) */
    if (n->addl != NULL && n->npprops == 0 && count > 0)
      unk = jc_stk_push(c, count);
    if (c->abort == JC_ABORT_STATE) return 0;   /* jc_verdict_nolua */
    for (j = i + 1; j < end; j = jc_tv_next(t, j + 1)) {
      const jc_prop *p = jc_find_prop(n, t->v[j].s, t->v[j].u.len);
      if (p != NULL) {
        c->stk[slots + (size_t)p->sidx] = j + 1;
        known++;
        jc_mark_name(c->names, &t->v[j], p);
      } else if (unk != (size_t)-1) {
        c->stk[unk + nunk++] = j;
      }
    }
  }
  for (k = 0; k < n->nrequired; k++) {
    const jc_prop *p = &n->required[k];
    int missing = p->sidx >= 0 ? c->stk[slots + (size_t)p->sidx] == 0
                               : jc_obj_find(t, i, p->name, p->len) == 0;
    if (missing) {
      ok = 0;
      jc_report_required(c, n, p);
      if (JC_STOP(c)) goto out;
    }
  }
  for (k = 0; k < n->nprops; k++) {
    const jc_prop *p = &n->props[k];
    size_t e = c->stk[slots + (size_t)p->sidx];
    if (e != 0 && !jc_pass_bits(c, p->pass, &t->v[e]) &&
        !jc_child(c, p->node, e, p->name, p->len, 0)) {
      ok = 0;
      if (JC_STOP(c)) goto out;
    }
  }

  /* every member named in 'properties' and no patternProperties: nothing
  ** is left for additionalProperties */
  if (n->npprops > 0 || (n->addl != NULL && known < count)) {
    /* first a quiet pass (document order, or the undeclared members
    ** listed above); the sorted pass below runs only to report what
    ** failed, in a stable order */
    int fast = 1;
    c->quiet++;
    if (unk != (size_t)-1) {
      for (k = 0; k < nunk && fast; k++)
        fast = jc_eval_member(c, n, c->stk[unk + k], 0);
    } else {
      for (j = i + 1; j < end && fast; j = jc_tv_next(t, j + 1))
        fast = jc_eval_member(c, n, j, -1);
    }
    c->quiet--;
    if (n->nprops > 0) jc_stk_pop(c, slots);
    slots = (size_t)-1;
    if (c->abort) return 0;
    if (!fast) {
      ok = 0;
      if (!c->quiet) {
        lua_State *L = c->L;
        jc_key *keys;
        JC_SLOTS(c);
        /* one userdata per object level being reported: room for them */
        luaL_checkstack(L, 24, "jsoncontract.validate");
        keys = (jc_key *)jc_newuserdata(L, (count ? count : 1) *
                                           sizeof(jc_key));
        for (j = i + 1, k = 0; j < end; j = jc_tv_next(t, j + 1), k++) {
          keys[k].s = t->v[j].s;
          keys[k].len = t->v[j].u.len;
          keys[k].e = j;
        }
        qsort(keys, k, sizeof(jc_key), jc_key_cmp);
        for (j = 0; j < k; j++) {
          if (!jc_eval_member(c, n, keys[j].e, -1) && JC_STOP(c)) break;
        }
        lua_pop(L, 1);
        if (JC_STOP(c)) return 0;
      } else {
        return 0;
      }
    }
  }
  if (slots != (size_t)-1 && n->nprops > 0) jc_stk_pop(c, slots);
  if (n->min_props != ABSENT && count < n->min_props) {
    ok = 0;
    jc_report_count(c, n, "minProperties", count, "properties", "minimum",
                    n->min_props);
    if (JC_STOP(c)) return 0;
  }
  if (n->max_props != ABSENT && count > n->max_props) {
    ok = 0;
    jc_report_count(c, n, "maxProperties", count, "properties", "maximum",
                    n->max_props);
    if (JC_STOP(c)) return 0;
  }
  return ok;
out:
  if (slots != (size_t)-1 && n->nprops > 0) jc_stk_pop(c, slots);
  return 0;
}

/* jc_eval of an in-place subschema 'n' (allOf, anyOf, oneOf, not, if) on
** entry 'i' (dereferenced) at the current quiet level. In the verdict pass
** 'true', 'false', a scalar leaf on a scalar and 'type' alone on an array
** or object are decided here, charged as jc_eval charges them: the unit
** up front, and on a container inside an applicator the quiet evaluation
** counted towards JC_MEMO_LAZY (past it jc_eval, which keeps the memo),
** so the budget and the memo run exactly as before. */
static JC_INLINE int jc_inplace(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tv *x;
  if (!c->qbase) return jc_eval(c, n, i);
  if (n->jump != NULL) n = n->jump;     /* c->nvia < 0 in this pass */
  if (n->boolean >= 0) return n->boolean;
  x = &c->t->v[i];
  if ((n->kw & ~(KW_ENUM | KW_STR | KW_NUM)) == 0 && !c->abort &&
      c->work >= 1.0 && c->edepth < JC_SCHEMA_MAX_EVAL && !c->v->dynamic) {
    if ((1u << x->kind) & JC_SCALAR_KINDS) {
      c->work -= 1.0;
      return jc_scalar_ok(c, n, i, x);
    }
    if (n->kw == 0 && (x->kind == JT_OBJECT || x->kind == JT_ARRAY) &&
        (c->quiet == c->qbase || c->memo_skip < JC_MEMO_LAZY)) {
      if (c->quiet > c->qbase) c->memo_skip++;
      c->work -= 1.0;
      return jc_type_ok(n, x);
    }
  }
  /* a plain subschema (jc_node.vfast) by jc_vfast, as jc_verdict takes
  ** it: jc_eval would keep no memo for it here either (a scalar, the
  ** applicator's own level, or a container among the first JC_MEMO_LAZY
  ** quiet evaluations, counted the same) */
  if (n->vfast && !c->abort) {
    int box = x->kind == JT_OBJECT || x->kind == JT_ARRAY;
    if (c->quiet == c->qbase || (x->kind != JT_REF && !box))
      return jc_vfast_out(c, n, i);
    if (box && c->memo_skip < JC_MEMO_LAZY) {
      c->memo_skip++;
      return jc_vfast_out(c, n, i);
    }
  }
  return jc_eval(c, n, i);
}

/* Evaluate applicator lists quietly; returns how many matched and the
** first two matching indexes. */
static size_t jc_count_matches(jc_vctx *c, jc_node *const *list, size_t n,
                               size_t i, size_t stop_at, size_t *which) {
  size_t k, hits = 0;
  c->quiet++;
  for (k = 0; k < n && hits < stop_at && !c->abort; k++) {
    if (jc_inplace(c, list[k], i)) {
      if (hits < 2) which[hits] = k;
      hits++;
    }
  }
  c->quiet--;
  return hits;
}

/* Enter the resource of 'n' in the dynamic scope; returns 1 if pushed. */
static int jc_scope_push(jc_vctx *c, const jc_node *n) {
  if (c->stop > 0 && c->v->scope[c->stop - 1] == n->res) return 0;
  c->v->scope[c->stop++] = n->res;
  return 1;
}

/* The node a '$dynamicRef' evaluates: the outermost resource in the
** dynamic scope with a '$dynamicAnchor' of its name, else the static
** target. */
static const jc_node *jc_dyn_target(jc_vctx *c, const jc_node *n) {
  int i;
  size_t k;
  if (n->dyn_name == NULL) return n->dynref;
  for (i = 0; i < c->stop; i++) {
    const jc_res *r = c->v->scope[i];
    for (k = 0; k < r->ndyn; k++)
      if (strcmp(r->dyn_names[k], n->dyn_name) == 0) return r->dyn_nodes[k];
  }
  return n->dynref;
}

/* Evaluate reference target 'to' of 'from' (keyword 'kw'), recording the
** step for the keyword location when it is tracked. */
static int jc_eval_ref(jc_vctx *c, const jc_node *from, const jc_node *to,
                       const char *kw, size_t i) {
  int ok;
  if (c->nvia < 0 || c->nvia >= JC_SCHEMA_MAX_EVAL) return jc_eval(c, to, i);
  c->v->via[c->nvia].from = from;
  c->v->via[c->nvia].to = to;
  c->v->via[c->nvia].kw = kw;
  c->nvia++;
  ok = jc_eval(c, to, i);
  c->nvia--;
  return ok;
}

/* Quiet validity of 'n' on entry 'i'. */
static int jc_quiet_ok(jc_vctx *c, const jc_node *n, size_t i) {
  int ok;
  c->quiet++;
  ok = jc_eval(c, n, i);
  c->quiet--;
  return ok;
}

/*
** Annotations for unevaluatedProperties/Items: mark on the scratch stack
** at 'pb' the member ordinals and at 'ib' the item indexes that 'n' and
** its in-place subschemas evaluated on entry 'i'; '*allp'/'*alli' when
** all were. Subschemas that fail contribute nothing (anyOf, oneOf, if);
** 'self' skips n's own unevaluated* keywords.
*/
static void jc_collect(jc_vctx *c, const jc_node *n, size_t i, size_t pb,
                       size_t ib, int *allp, int *alli, int self) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t k, j, m;
  int pushed = 0;
  if (n->boolean >= 0 || c->abort) return;
  if (c->edepth + 1 > JC_SCHEMA_MAX_EVAL) return;
  c->edepth++;
  if (c->v->dynamic) pushed = jc_scope_push(c, n);
  if (n->ref != NULL)
    jc_collect(c, n->ref, i, pb, ib, allp, alli, 0);
  if (n->dynref != NULL)
    jc_collect(c, jc_dyn_target(c, n), i, pb, ib, allp, alli, 0);
  if (x->kind == JT_OBJECT) {
    if (n->addl != NULL || n->addl_true || (!self && n->uprops != NULL))
      *allp = 1;
    if (!*allp && (n->nprops > 0 || n->npprops > 0)) {
      for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j + 1), m++) {
        const jc_tv *key = &t->v[j];
        int hit = jc_find_prop(n, key->s, key->u.len) != NULL;
        for (k = 0; !hit && k < n->npprops; k++)
          hit = jc_match(c, n, n->pprops[k].re, key->s, key->u.len) ==
                JC_PATTERN_MATCH;
        if (hit) c->stk[pb + m] = 1;
      }
    }
    for (k = 0; k < n->ndeps; k++) {
      if (n->deps[k].node == NULL) continue;
      if (jc_obj_find(t, i, n->deps[k].name, n->deps[k].len) != 0)
        jc_collect(c, n->deps[k].node, i, pb, ib, allp, alli, 0);
    }
  } else if (x->kind == JT_ARRAY) {
    if (n->items != NULL || (!self && n->uitems != NULL)) *alli = 1;
    for (k = 0; k < n->nprefix && k < x->n; k++) c->stk[ib + k] = 1;
    if (n->contains != NULL && !*alli) {
      for (j = i + 1, k = 0; j < x->u.end; j = jc_tv_next(t, j), k++)
        if (jc_quiet_ok(c, n->contains, j)) c->stk[ib + k] = 1;
    }
  }
  for (k = 0; k < n->nallof; k++)
    jc_collect(c, n->allof[k], i, pb, ib, allp, alli, 0);
  for (k = 0; k < n->nanyof; k++)
    if (jc_quiet_ok(c, n->anyof[k], i))
      jc_collect(c, n->anyof[k], i, pb, ib, allp, alli, 0);
  for (k = 0; k < n->noneof; k++)
    if (jc_quiet_ok(c, n->oneof[k], i))
      jc_collect(c, n->oneof[k], i, pb, ib, allp, alli, 0);
  if (n->if_ != NULL) {
    if (jc_quiet_ok(c, n->if_, i)) {
      jc_collect(c, n->if_, i, pb, ib, allp, alli, 0);
      if (n->then_ != NULL)
        jc_collect(c, n->then_, i, pb, ib, allp, alli, 0);
    } else if (n->else_ != NULL) {
      jc_collect(c, n->else_, i, pb, ib, allp, alli, 0);
    }
  }
  if (pushed) c->stop--;
  c->edepth--;
}

/* unevaluatedProperties / unevaluatedItems of 'n' on entry 'i'. */
static JC_NOINLINE int jc_eval_unevaluated(jc_vctx *c, const jc_node *n,
                                           size_t i) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t cnt = x->n, base = jc_stk_push(c, cnt + 1), j, m;
  int allp = 0, alli = 0, ok = 1, r;
  if (c->abort == JC_ABORT_STATE) return 0;   /* jc_verdict_nolua */
  jc_collect(c, n, i, base, base, &allp, &alli, 1);
  if (x->kind == JT_OBJECT && n->uprops != NULL && !allp) {
    for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j + 1), m++) {
      const jc_tv *key = &t->v[j];
      if (c->stk[base + m]) continue;
      if (n->uprops->boolean == 0) {
        r = 0;
        jc_report_extra(c, n, "unevaluatedProperties", key->s, key->u.len, 0,
                        j + 1);
      } else {
        r = jc_eval_child(c, n->uprops, j + 1, key->s, key->u.len, 0);
      }
      if (!r) {
        ok = 0;
        if (JC_STOP(c)) break;
      }
    }
  }
  if (x->kind == JT_ARRAY && n->uitems != NULL && !alli) {
    for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j), m++) {
      if (c->stk[base + m]) continue;
      if (n->uitems->boolean == 0) {
        r = 0;
        jc_report_extra(c, n, "unevaluatedItems", NULL, 0, m, j);
      } else {
        r = jc_eval_child(c, n->uitems, j, NULL, 0, m);
      }
      if (!r) {
        ok = 0;
        if (JC_STOP(c)) break;
      }
    }
  }
  jc_stk_pop(c, base);
  return ok && !c->abort;
}

/* dependentRequired / dependentSchemas / dependencies and propertyNames. */
static JC_NOINLINE int jc_eval_object_more(jc_vctx *c, const jc_node *n,
                                           size_t i) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  size_t k, j;
  int ok = 1;
  for (k = 0; k < n->ndeps; k++) {
    const jc_dep *d = &n->deps[k];
    if (jc_obj_find(t, i, d->name, d->len) == 0) continue;
    for (j = 0; j < d->nreq; j++) {
      if (jc_obj_find(t, i, d->req[j].name, d->req[j].len) == 0) {
        ok = 0;
        if (!c->quiet) {
          luaL_Buffer b;
          const char *at;
          size_t len;
          jc_err_begin(c, n, d->kw);
          lua_pushlstring(L, d->req[j].name, d->req[j].len);
          lua_setfield(L, -3, "property");
          at = jc_push_item_pointer(c, &len);
          luaL_buffinit(L, &b);
          luaL_addstring(&b, "missing field ");
          luaL_addlstring(&b, at, len);
          luaL_addchar(&b, '/');
          jc_add_token(&b, d->req[j].name, d->req[j].len);
          luaL_addstring(&b, ", required when ");
          lua_pushlstring(L, d->name, d->len);
          luaL_addvalue(&b);
          luaL_addstring(&b, " is present");
          luaL_pushresult(&b);
          lua_remove(L, -2);
          jc_err_end(c);
        }
        if (JC_STOP(c)) return 0;
      }
    }
    if (d->node != NULL && !jc_eval(c, d->node, i)) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->pnames != NULL) {
    for (j = i + 1; j < t->v[i].u.end; j = jc_tv_next(t, j + 1)) {
      if (!jc_eval_child(c, n->pnames, j, t->v[j].s, t->v[j].u.len, 0)) {
        ok = 0;
        if (JC_STOP(c)) return 0;
      }
    }
  }
  return ok;
}

/* contains / minContains / maxContains. */
static JC_NOINLINE int jc_eval_contains(jc_vctx *c, const jc_node *n,
                                        size_t i) {
  const jc_tape *t = c->t;
  size_t j, hits = 0;
  for (j = i + 1; j < t->v[i].u.end && !c->abort; j = jc_tv_next(t, j))
    if (jc_quiet_ok(c, n->contains, j)) hits++;
  if (c->abort) return 0;
  if (hits < n->min_contains) {
    if (n->min_contains == 1 && hits == 0)
      jc_report(c, n, "contains", " has no item that matches \"contains\"");
    else
      jc_report_count(c, n, "minContains", hits, "items matching \"contains\"",
                      "minimum", n->min_contains);
    return 0;
  }
  if (n->max_contains != ABSENT && hits > n->max_contains) {
    jc_report_count(c, n, "maxContains", hits, "items matching \"contains\"",
                    "maximum", n->max_contains);
    return 0;
  }
  return 1;
}

/*
** Evaluate node 'n' on tape entry 'i'. Keyword order is fixed: $ref,
** type (a type failure ends the subschema), enum, const, the keywords of
** the value's type, allOf, anyOf, oneOf, not, if, unevaluated*. Returns 1
** when valid.
*/
int jc_eval(jc_vctx *c, const jc_node *n, size_t i) {
  lua_State *L = c->L;
  const jc_tv *x;
  int ok = 1, jt, pushed = 0, memo = 0;
  unsigned kw;
  size_t saved;
  if (n->jump != NULL && c->nvia < 0) n = n->jump;
  if (n->boolean == 1) return 1;
  if (c->abort) return 0;
  i = jc_tv_deref(c->t, i);
  saved = c->cur;
  c->cur = i;
  if (n->boolean == 0) {
    jc_report(c, n, NULL, " is not allowed");
    c->cur = saved;
    return 0;
  }
  if (--c->work < 0) {
    jc_over(c, n);
    c->cur = saved;
    return 0;
  }
  if (++c->edepth > JC_SCHEMA_MAX_EVAL) {
    jc_too_deep(c, n, "schema evaluation", JC_SCHEMA_MAX_EVAL);
    c->edepth--;
    c->cur = saved;
    return 0;
  }
  x = &c->t->v[i];
  jt = x->kind;
  kw = n->kw;
  if (c->quiet > c->qbase && !c->v->dynamic &&
      (jt == JT_OBJECT || jt == JT_ARRAY || (kw & KW_INPLACE) != 0)) {
    /* the first JC_MEMO_LAZY quiet evaluations are not remembered: most
    ** validations never repeat one, and the bound stays polynomial (at
    ** most JC_MEMO_LAZY more evaluations than with every one kept) */
    if (c->memo_skip < JC_MEMO_LAZY) {
      c->memo_skip++;
    } else {
      int r = jc_memo_get(c, n, i);
      if (r >= 0) {
        c->edepth--;
        c->cur = saved;
        return r;
      }
      memo = 1;
    }
  }
  if (c->v->dynamic) pushed = jc_scope_push(c, n);

  if ((kw & KW_REF) && !jc_eval_ref(c, n, n->ref, "$ref", i)) {
    ok = 0;
    if (JC_STOP(c)) goto done;
  }
  if ((kw & KW_DYNREF) &&
      !jc_eval_ref(c, n, jc_dyn_target(c, n), "$dynamicRef", i)) {
    ok = 0;
    if (JC_STOP(c)) goto done;
  }
  if (!jc_type_ok(n, x)) {
    ok = 0;
    if (!c->quiet) {
      const char *where = jc_err_begin(c, n, "type");
      lua_pushstring(L, n->types_text);
      lua_setfield(L, -3, "expected");
      lua_pushstring(L, jc_jt_names[jt]);
      lua_setfield(L, -3, "actual");
      lua_pushfstring(L, "%s is %s, expected %s", where, jc_jt_names[jt],
                      n->types_text);
      jc_err_end(c);
    }
    goto done;
  }
  if ((kw & KW_ENUM) && !jc_enum_has(c, n, i)) {
    ok = 0;
    if (!c->quiet) {
      jc_keep_get(c, n->enum_ref);
      jc_report_enum(c, n, n->nenum);
      lua_pop(L, 1);
    }
    if (JC_STOP(c)) goto done;
  }
  if ((kw & KW_CONST) && !jc_tv_equal(c->t, i, n->const_tape, 0)) {
    ok = 0;
    if (!c->quiet) {
      int cv;
      const char *where;
      jc_keep_get(c, n->const_ref);
      cv = lua_gettop(L);
      where = jc_err_begin(c, n, "const");
      lua_pushvalue(L, cv);
      lua_setfield(L, -3, "expected");
      jc_tv_push_render(L, n->const_tape, 0);
      lua_pushfstring(L, "%s must be %s", where, lua_tostring(L, -1));
      lua_remove(L, -2);
      jc_err_end(c);
      lua_pop(L, 1);
    }
    if (JC_STOP(c)) goto done;
  }
  {
    int r = 1;
    switch (jt) {
      case JT_OBJECT:
        if (kw & KW_OBJ)
          r = c->quiet ? jc_eval_object_quiet(c, n, i, jc_vroom(c))
                       : jc_eval_object(c, n, i);
        if ((kw & KW_OBJ_MORE) && (r || !JC_STOP(c)))
          r = jc_eval_object_more(c, n, i) && r;
        break;
      case JT_ARRAY:
        if (kw & KW_ARR) r = jc_eval_array(c, n, i, jc_vroom(c));
        if ((kw & KW_CONTAINS) && (r || !JC_STOP(c)))
          r = jc_eval_contains(c, n, i) && r;
        break;
      case JT_STRING: if (kw & KW_STR) r = jc_eval_string(c, n, i); break;
      case JT_NUMBER: if (kw & KW_NUM) r = jc_eval_number(c, n, i); break;
      default: break;
    }
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) goto done;
    }
  }
  if (!(kw & KW_TAIL)) goto done;
  if (kw & KW_ALLOF) {
    size_t k;
    for (k = 0; k < n->nallof; k++) {
      if (!jc_inplace(c, n->allof[k], i)) {
        ok = 0;
        if (JC_STOP(c)) goto done;
      }
    }
  }
  if (kw & KW_ANYOF) {
    size_t which[2];
    if (jc_count_matches(c, n->anyof, n->nanyof, i, 1, which) == 0) {
      ok = 0;
      if (c->abort) goto done;
      jc_report(c, n, "anyOf", " does not match any of the %d alternatives",
                (int)n->nanyof);
      if (JC_STOP(c)) goto done;
    }
  }
  if (kw & KW_ONEOF) {
    size_t which[2];
    size_t hits = jc_count_matches(c, n->oneof, n->noneof, i, 2, which);
    if (c->abort) { ok = 0; goto done; }
    if (hits != 1) {
      ok = 0;
      if (hits == 0)
        jc_report(c, n, "oneOf", " does not match any of the %d alternatives",
                  (int)n->noneof);
      else
        jc_report(c, n, "oneOf",
                  " matches more than one of the %d alternatives "
                  "(%d and %d), expected exactly one",
                  (int)n->noneof, (int)which[0], (int)which[1]);
      if (JC_STOP(c)) goto done;
    }
  }
  if (kw & KW_NOT) {
    int matched;
    c->quiet++;
    matched = jc_inplace(c, n->not_, i);
    c->quiet--;
    if (c->abort) { ok = 0; goto done; }
    if (matched) {
      ok = 0;
      jc_report(c, n, "not", " must not match the schema in \"not\"");
      if (JC_STOP(c)) goto done;
    }
  }
  if (kw & KW_IF) {
    int cond;
    const jc_node *branch;
    c->quiet++;
    cond = jc_inplace(c, n->if_, i);
    c->quiet--;
    branch = cond ? n->then_ : n->else_;
    if (c->abort) { ok = 0; goto done; }
    if (branch != NULL && !jc_inplace(c, branch, i)) {
      ok = 0;
      if (JC_STOP(c)) goto done;
    }
  }
  if (((kw & KW_UPROPS) && jt == JT_OBJECT) ||
      ((kw & KW_UITEMS) && jt == JT_ARRAY)) {
    if (!jc_eval_unevaluated(c, n, i)) ok = 0;
  }
done:
  if (c->abort) ok = 0;
  else if (memo) jc_memo_put(c, n, i, ok);
  if (pushed) c->stop--;
  c->edepth--;
  c->cur = saved;
  return ok;
}

/* jc_verdict of a 'vfast' node, not aborted; 'bounded': the evaluation
** bound is known to have room (jc_vdeeper). Inline: 'jc_vchild' and
** 'jc_vdeeper' call it per container. */
static JC_HOT_INLINE int jc_vfast(jc_vctx *c, const jc_node *n, size_t i,
                                  int bounded) {
  const jc_tv *x;
  int ok, room;
  unsigned kw;
  i = jc_tv_deref(c->t, i);
  if (--c->work < 0) {
    c->abort = 2;                       /* jc_over, which reports nothing */
    return 0;
  }
  if (!bounded && c->edepth >= JC_SCHEMA_MAX_EVAL) {
    c->abort = 1;                       /* jc_too_deep, likewise */
    return 0;
  }
  c->edepth++;
  /* jc_vroom for the children: the verdict pass, not stopped, no
  ** $dynamicRef (a 'vfast' node), so only the bounds are left */
  room = c->depth < c->max_depth && c->edepth < JC_SCHEMA_MAX_EVAL;
  x = &c->t->v[i];
  kw = n->kw;
  ok = jc_type_ok(n, x) &&
       (!(kw & KW_ENUM) || jc_enum_has(c, n, i)) &&
       (!(kw & KW_CONST) || jc_tv_equal(c->t, i, n->const_tape, 0));
  if (ok) {
    switch (x->kind) {
      case JT_OBJECT:
        /* in jc_vdeeper ('bounded'), the walk of a child object is in
        ** line: one call per nested object, not two */
        if (kw & KW_OBJ)
          ok = bounded && room ? jc_object_quiet(c, n, i, 1)
                               : jc_eval_object_quiet(c, n, i, room);
        break;
      case JT_ARRAY: if (kw & KW_ARR) ok = jc_eval_array(c, n, i, room); break;
      case JT_STRING: if (kw & KW_STR) ok = jc_string_ok(c, n, i, x); break;
      case JT_NUMBER: if (kw & KW_NUM) ok = jc_number_ok(n, x); break;
      default: break;
    }
  }
  c->edepth--;
  return ok && !c->abort;
}

/* jc_vfast out of line, for a caller that is itself in line. */
static JC_NOINLINE int jc_vfast_out(jc_vctx *c, const jc_node *n, size_t i) {
  return jc_vfast(c, n, i, 0);
}

int jc_verdict(jc_vctx *c, const jc_node *n, size_t i) {
  if (n->jump != NULL) n = n->jump;     /* c->nvia < 0 in this pass */
  if (!n->vfast || c->abort) return jc_eval(c, n, i);
  return jc_vfast(c, n, i, 0);
}

/* Validate the value at entry 0 of tape 't' with 'v' ('deep' > 0: the
** writer found it deeper than max_depth at v->segs[0..deep); 'deep' -1:
** the writer ran out of budget). Returns 0 (valid, nothing pushed; the
** basic output pushes { valid = true } and returns 1) or the number of
** results pushed: nil, err (or the basic output table); with
** o->verdict_only, -1 (nothing pushed, no error built) when not valid.
** [-0, +0|1|2, m] */
/* Set up 'c' for a walk of 't' with 'v' ('L' and 'base' as jc_run has
** them; NULL and 0 for jc_verdict_nolua). Every field set by hand: a
** memset of the context was a 'rep stos', 40% of the fixed cost of a call
** on a small document. */
static JC_INLINE void jc_vctx_init(jc_vctx *c, lua_State *L, int base,
                                   jc_validator *v, const jc_tape *t,
                                   const jc_vopts *o) {
  c->L = L;
  c->v = v;
  c->t = t;
  c->base = base;
  c->slots = 0;
  c->keep = base + 1;
  c->errs = base + 2;
  c->nerr = 0;
  c->max_errors = o->max_errors;
  c->truncated = 0;
  c->first = o->first;
  c->quiet = 0;
  c->qbase = 0;
  c->abort = 0;
  c->depth = 0;
  c->max_depth = v->max_depth;
  c->edepth = 0;
  c->stop = 0;
  c->nvia = o->basic ? 0 : -1;
  c->cur = 0;
  c->names = t->text != NULL;
  c->stk_slot = base + 3;
  c->stk = c->stk_local;        /* small objects never leave the C stack */
  c->stk_n = 0;
  c->stk_cap = JC_STK_LOCAL;
  c->memo_slot = base + 4;
  c->memo = NULL;
  c->memo_n = 0;
  c->memo_cap = 0;
  c->memo_skip = 0;
  c->loc_off = 0;
  c->loc_line = c->loc_col = 1;
  c->budget = v->work_budget > 0 ? v->work_budget
             : JC_WORK_BUDGET + JC_WORK_PER_ENTRY * (double)t->n;
  c->work = c->budget;
}

int jc_verdict_nolua(jc_validator *v, const jc_tape *t) {
  jc_vctx c;
  jc_vopts o;
  int valid;
  o.first = o.basic = 0;
  o.max_errors = 1;
  o.verdict_only = 1;
  /* a text nested deeper than the validator's bound: jc_run reports */
  if (t->text != NULL && t->depth > (size_t)v->max_depth) return 1;
  jc_vctx_init(&c, NULL, 0, v, t, &o);
  c.quiet = c.qbase = 1;
  c.names = 0;
  valid = jc_verdict(&c, v->root, 0) && !c.abort;
  if (valid) return 0;
  return c.abort == JC_ABORT_STATE ? 2 : 1;
}

int jc_run(lua_State *L, jc_validator *v, const jc_tape *t,
                  const jc_vopts *o, int deep) {
  jc_vctx c;
  int base, i, valid = 0;
  /* a text's tape nested deeper than max_depth fails as a Lua value that
  ** deep does (jc_tape_write_lua), wherever the schema looks */
  if (deep == 0 && t->text != NULL && t->depth > (size_t)v->max_depth) {
    size_t *open = (size_t *)jc_newuserdata(
        L, ((size_t)v->max_depth + 1) * sizeof(size_t));
    deep = (int)jc_tape_too_deep(t, (size_t)v->max_depth, v->segs, open);
    lua_pop(L, 1);
  }
  base = lua_gettop(L);
  /* base + 1: keep, fetched on an error; base + 2: errors, made on the
  ** first; base + 3: scratch stack; base + 4: memo; all four pushed on
  ** first need ('jc_vslots') */
  jc_vctx_init(&c, L, base, v, t, o);
  if (deep > 0) {
    c.depth = deep;
    jc_too_deep(&c, v->root, "value", v->max_depth);
    c.depth = 0;
  } else if (deep < 0) {
    jc_over(&c, v->root);
  } else {
    /* First the verdict alone: quiet, so no error is built and objects
    ** take one pass in document order; most replies are valid and end
    ** here. An invalid one (or one past a bound) is walked again from
    ** the same start, reporting, exactly as if it were the only pass:
    ** a rejected reply costs at most twice the work budget. */
    c.quiet = c.qbase = 1;
    c.nvia = -1;
    valid = !o->invalid && jc_verdict(&c, v->root, 0) && !c.abort;
    if (!valid && o->verdict_only) {
      if (c.slots) lua_settop(L, base);
      return -1;
    }
    if (!valid) {
      c.quiet = c.qbase = 0;
      c.nvia = o->basic ? 0 : -1;
      c.abort = 0;
      c.depth = c.edepth = c.stop = 0;
      c.cur = 0;
      c.stk_n = 0;
      c.memo = NULL;          /* results of the verdict pass forgotten */
      c.memo_n = c.memo_cap = c.memo_skip = 0;
      c.work = c.budget;
      valid = jc_eval(&c, v->root, 0) && c.nerr == 0;
    }
  }
  if (valid) {
    if (c.slots) lua_settop(L, base);
    if (!o->basic) return 0;
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "valid");
    return 1;
  }
  JC_SLOTS(&c);
  if (o->basic) {
    jc_push_basic(L, c.errs, c.nerr, c.truncated);
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 1;
  }
  lua_settop(L, base + 2);
  if (lua_isnil(L, c.errs)) {
    lua_newtable(L);
    lua_replace(L, c.errs);
  }
  lua_pushnil(L);                 /* base + 3 */
  {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (i = 1; i <= c.nerr && i <= JC_MESSAGE_JOIN; i++) {
      if (i > 1) luaL_addstring(&b, "; ");
      lua_rawgeti(L, c.errs, i);
      lua_getfield(L, -1, "message");
      lua_remove(L, -2);
      luaL_addvalue(&b);
    }
    if (c.nerr > JC_MESSAGE_JOIN) {
      lua_pushfstring(L, "; and %d more errors", c.nerr - JC_MESSAGE_JOIN);
      luaL_addvalue(&b);
    }
    if (c.truncated) {
      lua_pushfstring(L, "; stopped after %d errors", c.nerr);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
  }
  jc_error_begin(L, "schema", c.abort == 1 ? "too_deep"
                 : c.abort == 2 ? "budget_exceeded" : "schema_mismatch", "%s",
                 lua_tostring(L, -1));
  lua_remove(L, -2);
  lua_pushvalue(L, c.errs);
  lua_setfield(L, -2, "errors");
  if (c.truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "truncated");
  }
  jc_error_end(L);
  lua_replace(L, base + 2);       /* base + 1: keep -> nil below */
  lua_pushnil(L);
  lua_replace(L, base + 1);
  lua_settop(L, base + 2);
  return 2;
}
