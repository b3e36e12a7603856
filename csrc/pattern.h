/*
** pattern.h: regular expressions for the schema gate ('pattern',
** 'patternProperties'), over PCRE2 8-bit. Only the schema gate
** (schema_compile.c, schema_eval.c) calls these.
**
** Semantics (JSON Schema 2020-12 §6.3.3 says ECMA-262; PCRE2 is close):
** PCRE2_UTF (code points), PCRE2_DOLLAR_ENDONLY ('$' only at the very end,
** so "ORD-1\n" does not match "^ORD-[0-9]+$"), PCRE2_ALT_BSUX ('\uhhhh' as
** in ECMA-262), no PCRE2_UCP ('\d', '\w' stay ASCII as in ECMA-262).
** Matching is a search (unanchored) and is bounded by a match limit (time),
** and by the memory the engine may use for backtracking: the JIT's stack, or
** the interpreter's depth and heap limits. A hostile pattern ends with one of
** the limit results below (JC_PATTERN_OVER) instead of hanging; each names
** the limit that was hit ('jc_pattern_why').
**
** Ownership: every PCRE2 resource is owned by a userdata with a __gc that
** frees it (idempotent), created before the resource is acquired, so an
** error raised anywhere leaks nothing. No Lua API call runs while PCRE2
** holds control.
*/
#ifndef JC_PATTERN_H
#define JC_PATTERN_H

#include "jc.h"

#ifndef JC_PATTERN_MATCH_LIMIT
#define JC_PATTERN_MATCH_LIMIT 1000000u   /* pcre2_set_match_limit */
#endif
#ifndef JC_PATTERN_DEPTH_LIMIT
#define JC_PATTERN_DEPTH_LIMIT 100000u    /* pcre2_set_depth_limit */
#endif
#ifndef JC_PATTERN_HEAP_LIMIT
#define JC_PATTERN_HEAP_LIMIT 65536u      /* pcre2_set_heap_limit, KiB */
#endif
/* The JIT keeps one backtracking frame per repetition of a group on its
** stack: 24 to 48 bytes per character for "^(a|b)+$" or "^(.)+$" (measured,
** PCRE2 10.42 on x86-64), so PCRE2's default 32 KiB stack (pcre2jit(3),
** "Controlling the JIT stack") ends such a search near 1,000 characters.
** A matcher whose search runs out of that stack gets a stack of its own,
** reserved up to this size (the same bound as the interpreter's heap), and
** searches again: about 1.3 MB of subject at 48 bytes per character. Pages
** are touched only as the stack grows; the stack is kept for the
** validator's life (see 'jc_matcher_new'). */
#ifndef JC_PATTERN_JIT_STACK
#define JC_PATTERN_JIT_STACK 65536u       /* pcre2_jit_stack_create max, KiB */
#endif
#ifndef JC_PATTERN_JIT_STACK_START
#define JC_PATTERN_JIT_STACK_START 256u   /* pcre2_jit_stack_create start, KiB */
#endif

typedef struct jc_pattern jc_pattern;   /* one compiled regex */
typedef struct jc_matcher jc_matcher;   /* match data + match context */

/* Results of 'jc_pattern_match'. */
#define JC_PATTERN_NOMATCH 0
#define JC_PATTERN_MATCH 1
#define JC_PATTERN_LIMIT (-1)     /* match limit hit (the search took too long) */
#define JC_PATTERN_BADUTF (-2)    /* subject is not valid UTF-8 */
#define JC_PATTERN_ERROR (-3)     /* any other PCRE2 failure */
#define JC_PATTERN_STACK (-4)     /* JIT stack limit hit (JC_PATTERN_JIT_STACK) */
#define JC_PATTERN_DEPTH (-5)     /* interpreter depth limit hit */
#define JC_PATTERN_HEAP (-6)      /* interpreter heap limit hit */
#define JC_PATTERN_NOMEM (-7)     /* memory for the search could not be had */

/* Did the search stop at a bound (time or memory) rather than decide? */
#define JC_PATTERN_OVER(rc) \
  ((rc) == JC_PATTERN_LIMIT || ((rc) <= JC_PATTERN_STACK && \
                                (rc) >= JC_PATTERN_NOMEM))

/*
** Compile 'src' (length 'len' bytes, UTF-8). Pushes a userdata
** "jsoncontract.Pattern" that owns the code and returns it. On a bad regex
** it still pushes the (empty) userdata, returns NULL and writes PCRE2's
** message and the 0-based byte offset into 'msg' (size 'msgsz') and
** '*offset'; the caller raises. Raises only on memory errors.
** Stack: [-0, +1, m]
*/
jc_pattern *jc_pattern_compile(lua_State *L, const char *src, size_t len,
                               char *msg, size_t msgsz, size_t *offset);

/*
** Push a userdata "jsoncontract.Matcher" owning the match data and match
** context (with the limits above) used by 'jc_pattern_match'; one per
** validator, reused by every call. It owns the JIT stack too, made by the
** first search that needs more than PCRE2's default 32 KiB and freed with
** the matcher. Raises a memory error if PCRE2 cannot allocate.
** Stack: [-0, +1, m]
*/
jc_matcher *jc_matcher_new(lua_State *L);

/*
** Search 's' (length 'len') for 'p'. Returns JC_PATTERN_MATCH,
** JC_PATTERN_NOMATCH, JC_PATTERN_BADUTF, JC_PATTERN_ERROR or one of the
** limit results (JC_PATTERN_OVER). Calls no Lua API. Stack: [-0, +0, -]
*/
int jc_pattern_match(const jc_pattern *p, jc_matcher *m, const char *s,
                     size_t len);

/* Why a search that did not decide stopped, for a message after "could
** not be checked against pattern P: " ("the match limit was hit", ...).
** A static string. */
const char *jc_pattern_why(int rc);

/* 'jc_pattern_match' of a subject already known to be well-formed UTF-8
** (a string the strict parser read): the UTF-8 check is skipped. */
int jc_pattern_match_utf8(const jc_pattern *p, jc_matcher *m, const char *s,
                          size_t len);

#endif
