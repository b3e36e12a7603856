/*
** schema.h: what the stages of the schema gate share (not a public
** header). The schema gate is split by stage:
**   schema_compile.c  a schema (Lua values) -> a tree of C nodes
**   schema_ref.c      $id/$anchor indexing, $ref/$dynamicRef resolution,
**                     remote documents through the loader, drafts
**   schema_eval.c     the validator on the tape (tape.h), work budget, memo
**   schema_report.c   error items, messages and the basic output
**   schema_lua.c      the Lua bindings: compile, Validator methods
**   schema_format.c   the 'format' checks
*/
#ifndef JC_SCHEMA_H
#define JC_SCHEMA_H

#include "jc.h"
#include "opts.h"
#include "parse.h"
#include "pattern.h"
#include "schema_format.h"
#include "tape.h"
#include "utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JC_VALIDATOR_MT "jsoncontract.Validator"

#ifndef JC_SCHEMA_MAX_DEPTH
#define JC_SCHEMA_MAX_DEPTH 1000      /* default instance depth bound */
#endif
#ifndef JC_SCHEMA_MAX_DEPTH_LIMIT
#define JC_SCHEMA_MAX_DEPTH_LIMIT 10000   /* largest max_depth accepted */
#endif
#ifndef JC_SCHEMA_MAX_EVAL
#define JC_SCHEMA_MAX_EVAL 8000       /* nested subschema evaluations (C stack) */
#endif
#ifndef JC_SCHEMA_MAX_NEST
#define JC_SCHEMA_MAX_NEST 1000       /* nesting of the schema itself at compile */
#endif
#ifndef JC_ENUM_SHOW
#define JC_ENUM_SHOW 10               /* allowed values listed in an enum message */
#endif
#ifndef JC_MESSAGE_JOIN
#define JC_MESSAGE_JOIN 20            /* error messages joined in err.message */
#endif
#ifndef JC_MAX_ERRORS
#define JC_MAX_ERRORS 100             /* default of validate's max_errors */
#endif
#define JC_COUNT_MAX (((size_t)-1) - 1)


/* Bits of the 'type' keyword. */
#define TB_NULL 0x01u
#define TB_BOOLEAN 0x02u
#define TB_OBJECT 0x04u
#define TB_ARRAY 0x08u
#define TB_NUMBER 0x10u
#define TB_INTEGER 0x20u
#define TB_STRING 0x40u

enum { LIM_MIN, LIM_MAX, LIM_XMIN, LIM_XMAX, LIM_MULT, LIM_N };

/* Keyword groups of a node (jc_node.kw), set once after compile. */
#define KW_REF 0x001u        /* $ref */
#define KW_DYNREF 0x002u     /* $dynamicRef */
#define KW_ENUM 0x004u
#define KW_CONST 0x008u
#define KW_OBJ 0x010u        /* properties, required, patternProperties,
                                additionalProperties, min/maxProperties */
#define KW_OBJ_MORE 0x020u   /* dependent*, propertyNames */
#define KW_ARR 0x040u        /* prefixItems, items, min/maxItems, unique */
#define KW_CONTAINS 0x080u
#define KW_STR 0x100u        /* min/maxLength, pattern, format */
#define KW_NUM 0x200u        /* minimum ... multipleOf */
#define KW_ALLOF 0x400u
#define KW_ANYOF 0x800u
#define KW_ONEOF 0x1000u
#define KW_NOT 0x2000u
#define KW_IF 0x4000u
#define KW_UPROPS 0x8000u
#define KW_UITEMS 0x10000u
#define JC_PASS_FREE 0x100u   /* jc_node.pass: 'true', costs no work */
/* jc_node.pass >> JC_LEAF_SHIFT: bit (1 << JT_*) for the scalar kinds when
** the node has only type, enum and the keywords of a scalar type: the
** verdict pass decides such a value in place ('jc_scalar_ok') */
#define JC_LEAF_SHIFT 16

/* jc_node.leaf[JT_*]: what 'jc_scalar_ok' checks on a value of that kind */
#define JC_LEAF_TYPE 0x01u    /* 'type' (or none) admits the kind */
#define JC_LEAF_INT 0x02u     /* 'type' admits it if integral ('integer') */
#define JC_LEAF_ENUM 0x04u
#define JC_LEAF_STR 0x08u     /* a string with string keywords */
#define JC_LEAF_NUM 0x10u     /* a number with numeric keywords */
#define JC_LEAF_LEN 0x20u     /* a string whose only string keywords to
                                 check are minLength/maxLength (not set
                                 with JC_LEAF_STR) */

/* in-place applicators: what makes a quiet result worth remembering */
#define KW_INPLACE (KW_REF | KW_ALLOF | KW_ANYOF | KW_ONEOF | KW_NOT | KW_IF)
/* what comes after the value's own keywords */
#define KW_TAIL (KW_ALLOF | KW_ANYOF | KW_ONEOF | KW_NOT | KW_IF | \
                 KW_UPROPS | KW_UITEMS)

typedef struct jc_node jc_node;

typedef struct jc_prop {       /* one member of 'properties' */
  const char *name;
  size_t len;
  jc_u64 wa, wb;               /* 'jc_name_words' of the name (props and
                                  props_sorted only) */
  jc_node *node;
  int name_ref;                /* keep index of the name as a Lua string */
  long sidx;                   /* index in 'props_sorted', -1 = none */
  long eidx;                   /* props_sorted: index in 'props' */
  int req;                     /* props, props_sorted: named in 'required' */
  unsigned pass;               /* node->pass, next to the name (props and
                                  props_sorted; set by jc_node_link) */
} jc_prop;

typedef struct jc_estr {       /* a string member of 'enum' */
  jc_u64 wa, wb;               /* 'jc_name_words' of its bytes */
  size_t len;
  const char *s;
  size_t k;                    /* its index among the enum's members */
} jc_estr;

typedef struct jc_patprop {    /* one member of 'patternProperties' */
  const char *src;
  size_t len;
  jc_pattern *re;
  jc_node *node;
} jc_patprop;

typedef struct jc_dep {       /* dependentRequired / dependentSchemas */
  const char *kw;              /* the keyword it came from */
  const char *name;
  size_t len;
  jc_prop *req;                /* required names, or NULL */
  size_t nreq;
  jc_node *node;               /* schema, or NULL */
} jc_dep;

typedef struct jc_res {        /* a schema resource (a document or $id) */
  const char *uri;
  size_t ndyn;                 /* its $dynamicAnchor names and targets */
  const char **dyn_names;
  jc_node **dyn_nodes;
} jc_res;

typedef struct jc_limit {      /* a numeric bound, exact for integers */
  int set;
  int isint;                   /* 'i' holds it (int64) */
  long long i;
  lua_Number d;                /* it, or its nearest double */
  const char *big;             /* an integer beyond int64 from schema text:
                                  its lexeme (kept by the validator) */
  unsigned bign;
} jc_limit;

struct jc_node {
  const char *path;            /* schema pointer of this subschema ("" root) */
  const char *abs;             /* absolute location: "<base URI>#<pointer>" */
  jc_res *res;                 /* the resource it belongs to */
  int mark;                    /* cycle check at compile */
  int boolean;                 /* -1 object schema, 0 false, 1 true */
  unsigned types;              /* TB_* bits, 0 = no 'type' */
  unsigned kw;                 /* KW_* bits: which keyword groups are
                                  present (jc_node_finish), so the walk
                                  tests one word, not every field */
  unsigned pass;               /* bit (1 << JT_*): a value of that kind
                                  passes with nothing to check (type
                                  alone, or 'true'); JC_PASS_FREE: 'true'
                                  (no work unit); the leaf kinds at
                                  JC_LEAF_SHIFT. Set by jc_node_finish;
                                  0 with $dynamicRef in the schema */
  unsigned char leaf[8];       /* JC_LEAF_* by JT_* kind (jc_node_finish) */
  int vfast;                   /* only type, enum, const and the keywords
                                  of one value type (no reference, no
                                  applicator; no $dynamicRef in the
                                  schema): the verdict pass evaluates it
                                  in 'jc_verdict' (jc_node_finish) */
  const jc_node *jump;         /* a subschema of '$ref' alone: its final
                                  target, evaluated in its place when
                                  keyword locations are not tracked (the
                                  errors are the target's); NULL else, and
                                  with $dynamicRef in the schema */
  const char *types_text;      /* "string or null" */
  int enum_ref, const_ref;     /* index in the keep table, 0 = absent */
  int enum_tables;             /* the enum has array/object members */
  jc_tape *enum_tape;          /* the enum members on one tape */
  size_t nenum;
  size_t *enum_roots;          /* entry of each member */
  int *enum_names;             /* keep index of each string member's Lua
                                  string (check reuses it), 0 for others */
  jc_u64 *enum_hash;           /* (hash, member) pairs sorted by hash */
  jc_estr *enum_strs;          /* the string members, in enum order: a
                                  string is compared by length and words
                                  ('jc_enum_has'), not through the tape */
  size_t nenum_strs;
  unsigned *enum_shash;        /* past 16 members: index + 1 in enum_strs
                                  by jc_name_hash (seed 0), open
                                  addressing, 0 empty; NULL otherwise */
  size_t enum_smask;           /* its size - 1 */
  jc_tape *const_tape;         /* 'const' at entry 0 */
  const char *base;            /* base URI */
  jc_node *ref;                /* '$ref' target */
  jc_node *dynref;             /* '$dynamicRef' static target */
  const char *dyn_name;        /* its anchor name when dynamic, else NULL */
  /* objects */
  jc_prop *required;           /* names only */
  size_t nrequired;
  size_t nreq_props;           /* distinct required names in 'properties' */
  size_t nreq_other;           /* required names not in 'properties' */
  jc_prop *props;              /* evaluation order: required order, then bytes */
  jc_prop *props_sorted;       /* byte order, for lookup */
  size_t nprops;
  size_t *order;               /* the member order last seen, a guess the
                                  walk tries before the lookup: order[0]
                                  the 'props' index of the first declared
                                  member, order[e + 1] of the one after
                                  props[e]; any value is safe (>= nprops:
                                  none). Written by the walk ('n' stays
                                  const to it); nprops + 1 entries */
  int props_set;               /* keep index: { name = index + 1 in sorted } */
  unsigned *props_hash;        /* sorted index + 1, 0 empty: a perfect
                                  hash table (one name per slot) */
  size_t props_mask;           /* its size - 1 (more than 4 properties) */
  size_t props_seed;           /* seed of 'jc_name_hash' for this table */
  size_t scan_from;            /* objects of this many members or more
                                  are walked by the declared names (only
                                  'properties' matter: no pattern or
                                  additional properties), not member by
                                  member; (size_t)-1: never
                                  (jc_node_finish) */
  jc_patprop *pprops;          /* byte order of the source */
  size_t npprops;
  jc_node *addl;               /* 'additionalProperties' (NULL if true) */
  int addl_true;               /* additionalProperties: true (annotation) */
  size_t min_props, max_props; /* (size_t)-1 = absent */
  jc_dep *deps;                /* dependentRequired, dependentSchemas */
  size_t ndeps;
  jc_node *pnames;             /* 'propertyNames' */
  jc_node *uprops;             /* 'unevaluatedProperties' */
  /* arrays */
  jc_node **prefix;
  size_t nprefix;
  jc_node *items;
  size_t min_items, max_items;
  int unique;
  jc_node *contains;
  size_t min_contains, max_contains;
  jc_node *uitems;             /* 'unevaluatedItems' */
  /* strings */
  size_t min_len, max_len;
  jc_pattern *pattern;
  const char *pattern_src;
  int format;
  const char *format_name;
  /* numbers */
  jc_limit lim[LIM_N];
  int lim_dbl;                 /* no multipleOf, every bound set exact as
                                  a double (an integer within 2^53):
                                  'lim_d' decides a number that is exact
                                  as a double too */
  double lim_d[4];             /* LIM_MIN .. LIM_XMAX as doubles, NaN when
                                  absent (every comparison with it false) */
  /* applicators */
  jc_node **allof, **anyof, **oneof;
  size_t nallof, nanyof, noneof;
  jc_node *not_;
  jc_node *if_, *then_, *else_;
};

typedef struct jc_via {        /* one reference followed at validation */
  const jc_node *from;         /* the node holding the reference */
  const jc_node *to;           /* its target */
  const char *kw;              /* "$ref" or "$dynamicRef" */
} jc_via;

typedef struct jc_validator {
  int keep_ref;                /* registry ref of the keep table */
  jc_node *root;
  jc_matcher *matcher;
  jc_seg *segs;                /* max_depth + 1 entries */
  int max_depth;
  int format_assertion;
  int dynamic;                 /* uses $dynamicRef: keep the dynamic scope */
  jc_res **scope;              /* dynamic scope stack, JC_SCHEMA_MAX_EVAL+2 */
  const char *base;            /* base URI of the root */
  const void *amt;             /* the JC_ARRAY_MT table (registry) */
  const void *tmt;             /* the JC_TAPE_MT table (registry): a tape
                                  is known by its metatable's address */
  jc_via *via;                 /* references being followed, for the
                                  keyword location ("basic" output) */
  double work_budget;          /* work units per validation, 0 = default */
  jc_tape *tape;               /* reused by validate/check (keep.tape) */
  int busy;                    /* a validate/check call is running: segs,
                                  scope, via and tape are its own, so a
                                  call from a __gc inside it raises */
  int closing;                 /* close() came while busy: closed for new
                                  calls, freed when the running one ends */
} jc_validator;

#define ABSENT ((size_t)-1)

/* Compile context (schema_compile.c, schema_ref.c). */
typedef struct jc_cctx {
  lua_State *L;
  int keep;            /* abs index: keep table (array of owned values) */
  int nkeep;
  int cache;           /* abs index: schema table -> node userdata */
  int root;            /* abs index: the root schema value */
  int nest;
  jc_validator *v;
  int draft;           /* JC_D4, JC_D7, JC_D2019 or JC_D2020 */
  int draftof;         /* abs index: schema table -> its draft */
  int loader;          /* abs index of the loader function, 0 = none */
  int reg;             /* abs index: document/resource URI -> schema */
  int anchors;         /* abs index: "<uri>#<name>" -> schema */
  int dyns;            /* abs index: URI -> { name -> schema } */
  int loc;             /* abs index: schema table -> "<base>#<pointer>" */
  int baseof;          /* abs index: schema table -> base URI */
  int resof;           /* abs index: base URI -> jc_res (light) */
  int nodes;           /* abs index: list of every node (light) */
  int novalidation;    /* $vocabulary of the meta-schema lacks validation */
  int nnodes;
  const jc_tape *src;  /* the schema's tape when compiled from text, or NULL */
  int srcmap;          /* abs index: schema table -> its entry in 'src' */
} jc_cctx;

#define JC_D4 4
#define JC_D7 7
#define JC_D2019 2019
#define JC_D2020 2020
/* Validation context (schema_eval.c, schema_report.c). */
/*
** The walk reads only the tape: no Lua API call on its hot path. Lua is
** used for what is rare: error items, the scratch stack and the memo
** table growing (userdata at fixed stack slots), uniqueItems' hash table.
**
** Work budget: every subschema evaluation costs one unit, a regex search
** one plus one per 16 subject bytes, and one that hits a PCRE2 limit (the
** match limit, or the JIT stack, depth or heap limit: JC_PATTERN_OVER)
** JC_WORK_REGEX_LIMIT more. Past the budget the walk stops with a
** 'budget' error (err.kind budget_exceeded). Default: JC_WORK_BUDGET plus
** JC_WORK_PER_ENTRY per tape entry (about a second of work on a small
** reply, linear in a large one); compile's 'work_budget' option sets it.
**
** Memo: results of (subschema, tape entry) are remembered when the walk
** is quiet (anyOf, oneOf, not, if, contains, unevaluated*) so
** branches that re-evaluate the same subtree cost once: polynomial work
** for recursive schemas whose alternatives all recurse. Not used with
** $dynamicRef (the result depends on the dynamic scope).
**
** Two passes (jc_run): first the verdict alone, quiet at level 'qbase'
** (no error item, objects in document order, 'jc_verdict' for plain
** subschemas; the memo only inside applicators, as in the second pass);
** a valid instance ends there. Otherwise the walk starts again from the
** same state (memo emptied, the whole budget) and reports, so the errors
** are exactly those of one reporting walk.
*/

#ifndef JC_WORK_BUDGET
#define JC_WORK_BUDGET 20000000.0     /* work units, fixed part */
#endif
#ifndef JC_WORK_PER_ENTRY
#define JC_WORK_PER_ENTRY 16.0        /* work units per tape entry */
#endif
#ifndef JC_WORK_REGEX_LIMIT
#define JC_WORK_REGEX_LIMIT 100000.0  /* a regex search that hit a limit */
#endif
#ifndef JC_MEMO_LAZY
#define JC_MEMO_LAZY 32               /* first quiet evaluations not kept */
#endif
#ifndef JC_MEMO_MAX
#define JC_MEMO_MAX (1u << 22)        /* memo entries, at most */
#endif
#ifndef JC_UNIQUE_SMALL
#define JC_UNIQUE_SMALL 16            /* up to this many items: pairwise */
#endif
#ifndef JC_HASH_BUDGET
#define JC_HASH_BUDGET 4096L          /* entries hashed per item, at most */
#endif

#ifndef JC_SCAN_RATIO
#define JC_SCAN_RATIO 4               /* members per declared property from
                                         which a quiet object walk looks
                                         for the declared names instead */
#endif

#define JC_STK_LOCAL 64   /* scratch entries before a userdata is made */

typedef struct jc_memo {
  const jc_node *n;            /* NULL: empty */
  size_t i;
  int r;
} jc_memo;

/* Every field is set one by one in jc_run (no memset): a new field needs
** its line there. */
typedef struct jc_vctx {
  lua_State *L;
  jc_validator *v;
  const jc_tape *t;
  int base;            /* stack top when the walk began */
  int slots;           /* the four slots below are on the stack: made on
                          first need ('jc_vslots'), a valid instance that
                          needs no scratch never touches the stack */
  int keep;            /* abs index of the keep table */
  int errs;            /* abs index of the errors list */
  int nerr;
  int max_errors;      /* errors kept, 0 = no bound */
  int truncated;       /* one more error was dropped: the walk unwinds */
  int first;           /* stop at the first error */
  int quiet;           /* > 0 inside anyOf/oneOf/not: record nothing */
  int qbase;           /* 1 in the verdict pass (jc_run), whose quiet
                          level is not an applicator's: no memo there */
  int abort;           /* 1 too deep, 2 work budget, JC_ABORT_STATE: the
                          walk needs a state it has not (L == NULL,
                          jc_verdict_nolua): unwind */
  int depth;           /* instance depth */
  int max_depth;       /* v->max_depth */
  int edepth;          /* nested subschema evaluations */
  int stop;            /* entries in the dynamic scope (v->scope) */
  int nvia;            /* entries in v->via; -1: not tracked */
  size_t cur;          /* tape entry being evaluated (error positions) */
  int names;           /* mark member names and enum strings JC_TF_NAME
                          (a tape of parsed text whose Lua value may be
                          built from it; not in jc_verdict_nolua, whose
                          callers build none) */
  double work;         /* work units left */
  double budget;       /* the budget, for the message */
  int stk_slot;        /* stack slot of the scratch userdata */
  size_t *stk;         /* stk_local, then a userdata at stk_slot */
  size_t stk_n, stk_cap;
  int memo_slot;       /* stack slot of the memo userdata */
  jc_memo *memo;
  size_t memo_n, memo_cap;
  size_t memo_skip;    /* quiet evaluations not remembered (JC_MEMO_LAZY) */
  size_t loc_off;      /* line/column cache for error positions */
  unsigned long loc_line, loc_col;
  size_t stk_local[JC_STK_LOCAL];   /* last: not cleared on entry */
} jc_vctx;

#define JC_ABORT_STATE 3

#define JC_STOP(c) ((c)->quiet || (c)->abort || (c)->truncated || \
                   ((c)->first && (c)->nerr > 0))
#define jc_stk_pop(c, base) ((c)->stk_n = (base))

typedef struct jc_uslot {      /* uniqueItems' hash table */
  jc_u64 h;
  size_t item;                     /* 1-based; 0 = empty */
} jc_uslot;

typedef struct jc_key {
  const char *s;
  size_t len;
  size_t e;            /* tape entry of the member name */
} jc_key;


typedef struct jc_vopts {
  int first, basic, max_errors;
  int verdict_only;    /* jc_run stops after the quiet verdict: an invalid
                          value returns -1, nothing pushed, no error built
                          (the FFI path, whose state has no error tables) */
  int invalid;         /* the caller's jc_verdict_nolua said 1 (not valid):
                          jc_run skips its verdict pass and reports */
} jc_vopts;

extern const char *const jc_jt_names[];   /* by JT_* kind */

/* schema_compile.c */
int jc_is_array(lua_State *L, int idx);
int jc_json_type(lua_State *L, int idx);
int jc_schema_error(lua_State *L, const char *path, const char *kw, const char
    *fmt, ...);
int jc_keep(jc_cctx *c);
const char *jc_keep_string(jc_cctx *c, size_t *len);
void *jc_keep_block(jc_cctx *c, size_t n, size_t elem);
int jc_getkw(lua_State *L, int sidx, const char *kw);
int jc_cmp_bytes(const char *a, size_t al, const char *b, size_t bl);
/* The two words a member name is known by: its first and last 8 bytes
** (4 when shorter than 8; first, middle and last byte when shorter than
** 4). The loads overlap, as wyhash reads short keys: two names of the
** same length up to 16 bytes are equal exactly when their words are. */
static JC_INLINE void jc_name_words(const char *s, size_t len, jc_u64 *wa,
                                    jc_u64 *wb) {
  const unsigned char *u = (const unsigned char *)s;
  if (len >= 8) {
    memcpy(wa, s, 8);
    memcpy(wb, s + len - 8, 8);
  } else if (len >= 4) {
    unsigned x, y;
    memcpy(&x, s, 4);
    memcpy(&y, s + len - 4, 4);
    *wa = x;
    *wb = y;
  } else if (len > 0) {
    *wa = ((jc_u64)u[0] << 16) | ((jc_u64)u[len / 2] << 8) | u[len - 1];
    *wb = 0;
  } else {
    *wa = *wb = 0;
  }
}

/* Hash of a member name for the properties table, from its length and
** words, mixed with 'seed'. Compile picks the seed and the table size so
** that the declared names land in distinct slots ('jc_props_table'): a
** lookup is one hash and one slot. */
static JC_INLINE size_t jc_name_hash(jc_u64 wa, jc_u64 wb, size_t len,
                                     size_t seed) {
  jc_u64 h = (wa ^ (jc_u64)seed ^ ((jc_u64)len << 56)) *
             0xFF51AFD7ED558CCDULL;
  h = (h ^ (h >> 32) ^ wb) * 0xC4CEB9FE1A85EC53ULL;
  return (size_t)(h ^ (h >> 29));
}

/* Is declared property 'p' the name 's' (of words 'wa', 'wb')? Past 16
** bytes the words between the first and last 8 are compared too (8 at a
** time, the last one overlapping the final word). */
static JC_INLINE int jc_prop_is(const jc_prop *p, const char *s, size_t len,
                                jc_u64 wa, jc_u64 wb) {
  size_t o;
  if (p->len != len || p->wa != wa || p->wb != wb) return 0;
  if (len <= 16) return 1;   /* the common case, without the loop's setup */
  for (o = 8; o + 8 < len; o += 8) {
    jc_u64 x, y;
    memcpy(&x, p->name + o, 8);
    memcpy(&y, s + o, 8);
    if (x != y) return 0;
  }
  return 1;
}

/* The declared property named 's' (of words 'wa', 'wb'), or NULL: by the
** perfect hash table past 4 properties (a name not declared is told by
** its one slot), else by length and words. Inline: the walk calls it per
** member. */
static JC_HOT_INLINE const jc_prop *jc_find_prop_words(const jc_node *n,
                                                       const char *s,
                                                       size_t len, jc_u64 wa,
                                                       jc_u64 wb) {
  size_t k;
  if (n->props_hash != NULL) {
    unsigned e = n->props_hash[jc_name_hash(wa, wb, len, n->props_seed) &
                               n->props_mask];
    const jc_prop *p;
    if (e == 0) return NULL;
    p = &n->props_sorted[e - 1];
    return jc_prop_is(p, s, len, wa, wb) ? p : NULL;
  }
  for (k = 0; k < n->nprops; k++) {
    const jc_prop *p = &n->props_sorted[k];
    if (jc_prop_is(p, s, len, wa, wb)) return p;
  }
  return NULL;
}

/* The declared property named 's', or NULL (jc_find_prop_words). */
static JC_HOT_INLINE const jc_prop *jc_find_prop(const jc_node *n,
                                                 const char *s, size_t len) {
  jc_u64 wa, wb;
  jc_name_words(s, len, &wa, &wb);
  return jc_find_prop_words(n, s, len, wa, wb);
}

/* jc_find_prop for members in turn: first the guess of n->order[*prev]
** ('*prev' 0 before the first declared member, e + 1 after props[e]):
** replies of one contract mostly come with their members in one order, so
** the order met last is learned, and a guess that holds saves the hash
** and its table's cache line. The entry found may be that of 'props' or
** of 'props_sorted' (the same fields but 'sidx'/'eidx'). */
static JC_HOT_INLINE const jc_prop *jc_find_prop_next(const jc_node *n,
                                                      const char *s,
                                                      size_t len,
                                                      size_t *prev) {
  jc_u64 wa, wb;
  const jc_prop *p;
  size_t *guess = &n->order[*prev], e = *guess;
  jc_name_words(s, len, &wa, &wb);
  if (e < n->nprops && jc_prop_is(&n->props[e], s, len, wa, wb)) {
    *prev = e + 1;
    return &n->props[e];
  }
  p = jc_find_prop_words(n, s, len, wa, wb);
  if (p != NULL) {
    *guess = (size_t)p->eidx;      /* learned for the next object */
    *prev = (size_t)p->eidx + 1;
  }
  return p;
}
jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path, const char
    *abs, const char *base);
void jc_check_cycles(jc_cctx *c, jc_node *n);
/* Set n->kw and n->pass from its fields (after compile and $ref
** resolution, when v->dynamic and v->format_assertion are known). */
void jc_node_finish(const jc_validator *v, jc_node *n);
/* Set n->jump (and n->pass from it) once every node is finished. */
void jc_node_link(const jc_validator *v, jc_node *n);
/* Copy the 'pass' of each property's node into n's property tables, once
** every node is linked. */
void jc_node_props_pass(jc_node *n);

/* schema_ref.c */
void jc_push_join(lua_State *L, const char *a, size_t al, char sep, const char
    *b, size_t bl);
void jc_setpair(lua_State *L, int t);
void jc_index(jc_cctx *c, int idx, const char *base, size_t blen, const char
    *ptr, size_t plen, int depth);
jc_node *jc_compile_ref(jc_cctx *c, jc_node *n, const char *kw, const char
    *ref, size_t reflen, int dyn);
jc_res *jc_get_res(jc_cctx *c, const char *base);
int jc_draft_name(const char *d);
int jc_draft_uri(const char *u);
int jc_meta_novalidation(lua_State *L, int uidx);
int jc_push_metaschema(lua_State *L, const char *u, size_t len);

/* schema_eval.c */
/* The verdict of 'n' on entry 'i' in the verdict pass (c->qbase, not
** inside an applicator): 'jc_eval' without what only reporting, the
** memo or the dynamic scope need, for subschemas marked 'vfast'; others
** go to 'jc_eval'. */
int jc_verdict(jc_vctx *c, const jc_node *n, size_t i);
/* Make the context's four stack slots (keep, errors, scratch, memo) at
** base + 1 .. base + 4, below whatever the walk has pushed since it
** began. [-0, +4, m] */
void jc_vslots(jc_vctx *c);
#define JC_SLOTS(c) do { if (!(c)->slots) jc_vslots(c); } while (0)
int jc_eval(jc_vctx *c, const jc_node *n, size_t i);
int jc_run(lua_State *L, jc_validator *v, const jc_tape *t, const jc_vopts *o,
    int deep);
/* jc_run's verdict pass alone with no lua_State: nothing raised, nothing
** allocated (jc_run with o->verdict_only, minus what needs a state).
** Returns 0 valid, 1 not valid (or past a bound: jc_run reports it), 2
** when the walk needed a state (scratch or memo past their first size,
** uniqueItems past JC_UNIQUE_SMALL items, a 'regex' format): then ask
** jc_run. The caller makes sure no other walk uses 'v' (v->busy). */
int jc_verdict_nolua(jc_validator *v, const jc_tape *t);

/* schema_report.c */
const char *jc_err_begin(jc_vctx *c, const jc_node *n, const char *kw);
void jc_err_end(jc_vctx *c);
const char *jc_push_item_pointer(jc_vctx *c, size_t *len);
void jc_report(jc_vctx *c, const jc_node *n, const char *kw, const char *fmt,
    ...);
void jc_too_deep(jc_vctx *c, const jc_node *n, const char *what, int limit);
void jc_over(jc_vctx *c, const jc_node *n);
void jc_report_enum(jc_vctx *c, const jc_node *n, size_t cnt);
void jc_report_required(jc_vctx *c, const jc_node *n, const jc_prop *p);
void jc_report_limit(jc_vctx *c, const jc_node *n, const char *kw, const char
    *text, const jc_limit *lim);
void jc_report_count(jc_vctx *c, const jc_node *n, const char *kw, size_t
    actual, const char *unit, const char *bound, size_t limit);
void jc_report_extra(jc_vctx *c, const jc_node *n, const char *kw, const char
    *key, size_t klen, size_t index, size_t e);
int jc_push_basic(lua_State *L, int errs, int n, int truncated);

#endif
