/*
** tape.h: the one value representation of the gates. A JSON document is a
** flat array of 'jc_tv' in document order (pre-order, like simdjson's
** tape): a container is followed by its children and records the index
** past its last one ('u.end'), so skipping it is O(1); an object's
** children are key, value, key, value... Strings point into the parsed
** text (or into the tape's byte arena when they had escapes, or into Lua
** strings when the tape was written from a Lua value). Numbers are exact:
** an int64, or (beyond int64, or with a fraction or exponent) the source
** lexeme plus its double.
**
** Ownership: a 'jc_tape' lives in a userdata "jsoncontract.Tape" whose
** __gc frees every block (allocated with the state's lua_Alloc, sizes
** remembered). An error raised halfway leaves the blocks to the __gc.
** A tape borrows the text and the Lua strings it points into: they must
** stay reachable (on the stack) while the tape is read.
*/
#ifndef JC_TAPE_H
#define JC_TAPE_H

#include "jc.h"

#include <string.h>

/* JSON types of values (also the 'kind' of a tape entry). */
enum { JT_NULL, JT_BOOLEAN, JT_OBJECT, JT_ARRAY, JT_NUMBER, JT_STRING,
       JT_OTHER, JT_REF };
/* JT_REF: only in tapes written from Lua: a table met again on another
** branch (a DAG) refers to the entry where it was written ('u.len'). */

#define JC_TF_TRUE 1u   /* boolean: true */
#define JC_TF_INT 2u    /* number: exact int64 in 'u.i' */
#define JC_TF_BIG 4u    /* number: integer lexeme beyond int64 ('s', 'n'),
                           'u.d' its nearest double */
#define JC_TF_LEX 8u    /* number: lexeme with fraction or exponent ('s',
                           'n'), 'u.d' its nearest double */
#define JC_TF_ESC 16u   /* string: had escapes, 's' is in the arena and 'n'
                           its offset in the text (0xffffffff: unknown) */
#define JC_TF_NAME 32u  /* member name, or string equal to an enum member
                           (not escaped), whose Lua string is kept at index
                           'n' of a names table (see 'jc_tape_push_lua') */
#define JC_NOOFF ((size_t)-1)   /* no offset: written from Lua */

/* 24 bytes. The byte offset of a value in the text is not stored but
** derived ('jc_tv_off'): parsed entries point at their first byte ('s';
** a string at the byte after its quote), but escaped strings, which
** point into the arena and keep their offset in 'n'. */
typedef struct jc_tv {
  unsigned char kind;   /* JT_* */
  unsigned char flags;  /* JC_TF_* */
  unsigned n;           /* array items, object members, lexeme bytes */
  const char *s;        /* string bytes; number lexeme; else (parsed) the
                           value's first byte in the text */
  union {
    size_t len;         /* string length (bytes) */
    size_t end;         /* container: index past its last child */
    long long i;        /* JC_TF_INT */
    double d;           /* other numbers */
  } u;
} jc_tv;

typedef struct jc_chunk jc_chunk;

typedef struct jc_dslot {   /* duplicate-key set of large objects */
  size_t obj, key;          /* tape indexes; key 0 = empty */
} jc_dslot;

typedef struct jc_tape {
  jc_tv *v;                 /* entries */
  size_t n, cap;
  jc_chunk *chunks;         /* byte arena (unescaped strings) */
  char *cur;
  size_t left;
  void *aux;                /* scratch for frames (parser, builder) */
  size_t auxcap;
  jc_dslot *dset;           /* parser's duplicate-key set */
  size_t dcap, dn;
  const char *text;         /* the parsed text, NULL when written from Lua */
  size_t len;
  size_t depth;             /* deepest nesting written */
  int busy;                 /* in use (a cached tape is not reentered) */
  const void *amt;          /* the registry's JC_ARRAY_MT table, once the
                               writer looked it up (NULL: not yet) */
  lua_Alloc alloc;
  void *ud;
  void *soft;               /* NULL, or a jmp_buf: a memory error jumps
                               there instead of raising ('jc_tape_nomem') */
} jc_tape;

/* One step of an instance location (JSON Pointer token). */
typedef struct jc_seg {
  const char *key;          /* NULL for an array index */
  size_t len;
  size_t index;
} jc_seg;

/* Entry 'i' with a reference followed. */
#define jc_tv_deref(t, i) ((t)->v[i].kind == JT_REF ? (t)->v[i].u.len : (i))

/* Next sibling of entry 'i'. */
#define jc_tv_next(t, i) jc_tv_after((t)->v, i)
/* The same on the entries 'v' of a tape, for a walk that holds them in a
** local (no reload of t->v after each store through them). */
#define jc_tv_after(v, i) \
  ((v)[i].kind == JT_OBJECT || (v)[i].kind == JT_ARRAY ? (v)[i].u.end \
                                                       : (i) + 1)

#define JC_TAPE_MT "jsoncontract.Tape"

/* Push a new, empty tape userdata. [-0, +1, m] */
jc_tape *jc_tape_new(lua_State *L);

/* The tape cached under registry name 'name' (made on first use) when it
** is not busy, else a fresh one (which becomes the cached tape; the busy
** one stays anchored on its caller's stack); pushes it, marks it busy and
** resets it. Call 'jc_tape_release' when done. [-0, +1, m] */
jc_tape *jc_tape_acquire(lua_State *L, const char *name);
/* The same for a tape cached at stack index 'slot' (an upvalue index
** works; nil there: one is made and cached). A busy cached tape is left
** alone and a fresh one used. Pushes the tape used. [-0, +1, m] */
jc_tape *jc_tape_acquire_at(lua_State *L, int slot);
void jc_tape_release(jc_tape *t);

/* Empty the tape, keeping its entry array (large arenas are freed). */
void jc_tape_reset(jc_tape *t);

/* Byte offset of entry 'i' in the text, JC_NOOFF when not parsed. */
size_t jc_tv_off(const jc_tape *t, size_t i);

/* Append one zeroed entry; returns its index (inline: the parser calls it
** once per value). Raises a memory error. [-0, +0, m]
** jc_tape_grow_entries is its slow path: room for at least one more. */
void jc_tape_grow_entries(lua_State *L, jc_tape *t);
static JC_INLINE size_t jc_tape_add(lua_State *L, jc_tape *t) {
  if (t->n == t->cap) jc_tape_grow_entries(L, t);
  memset(&t->v[t->n], 0, sizeof(jc_tv));
  return t->n++;
}

/* Out of memory while writing 't': raises "not enough memory" on 'L', or,
** while t->soft is set (a caller that runs the parser outside a protected
** call, ffi.c), longjmp()s to it. Never returns. */
void jc_tape_nomem(lua_State *L, jc_tape *t);

/* 'n' bytes in the tape's arena, valid until reset. [-0, +0, m] */
char *jc_tape_bytes(lua_State *L, jc_tape *t, size_t n);

/* The aux scratch with at least 'n' bytes (contents kept). [-0, +0, m] */
void *jc_tape_aux(lua_State *L, jc_tape *t, size_t n);

/* Grow the block '*p' of '*cap' elements of 'elem' bytes to at least
** 'need' elements (doubling), with the tape's allocator. [-0, +0, m] */
void jc_tape_grow(lua_State *L, jc_tape *t, void **p, size_t *cap,
                  size_t need, size_t elem);
void jc_tape_free(jc_tape *t, void *p, size_t size);

/*
** Push the Lua value of entry 'i' as core.decode makes it: objects as
** tables (with 'keep_order', each gets a metatable { __order = { keys in
** document order } }), arrays as tables with core.array_mt, null as
** core.null, numbers as on decode (Lua 5.3+: int64 exact integers).
** 'names' is 0 or the stack index of a table whose integer keys hold the
** Lua strings of member names marked JC_TF_NAME (the validator marks the
** names it found among declared properties, with their keep index): those
** are pushed from it instead of being interned again; so are strings it
** marked as equal to a string member of an 'enum'.
** 'map' is 0 or the stack index of a table that gets, for every table made
** for an object or array, table -> its entry index (a schema compiled from
** text finds its numbers' exact lexemes through it).
** Not recursive. [-0, +1, m]
*/
void jc_tape_push_lua(lua_State *L, jc_tape *t, size_t i, int keep_order,
                      int names, int map);

/*
** The first value of parsed tape 't', in document order, nested deeper
** than 'max_depth' (its JSON Pointer has more than 'max_depth' tokens):
** returns max_depth + 1 with its location in 'segs[0..max_depth]', or 0
** when there is none. 'open' is scratch of max_depth + 1 entries. Not
** recursive; a tape no deeper than 'max_depth' returns 0 at once. The
** same bound jc_tape_write_lua puts on a Lua value, for a text's tape.
*/
size_t jc_tape_too_deep(const jc_tape *t, size_t max_depth, jc_seg *segs,
                        size_t *open);

/*
** Append a copy of the value at entry 'i' of tape 's' (a container with
** all its entries) to tape 't'. Strings and lexemes still point into 's''s
** text and arena, which the caller keeps alive as long as 't'.
** [-0, +0, m]
*/
void jc_tape_copy(lua_State *L, jc_tape *t, const jc_tape *s, size_t i);

/*
** Append the Lua value at stack index 'idx' to the tape in one walk
** (bounded recursion: at most 'max_depth' levels). Strings point into the
** Lua strings (keep the value reachable while the tape is read). Arrays:
** tables with core.array_mt (keys must be 1..n) or with keys exactly
** 1..n (n >= 1); other tables are objects with string keys.
** Returns 0; 1 when the value is nested deeper than 'max_depth' (then
** 'segs[0..*depth)' holds the location, 'segs' has max_depth + 1 entries);
** 2 when '*budget' entries ran out. Raises (with the JSON Pointer) on a
** value that is not JSON: a function, coroutine or userdata, NaN or
** infinity, a key that is not a string, a marked array with other keys,
** a table that contains itself. [-0, +0, e]
*/
int jc_tape_write_lua(lua_State *L, jc_tape *t, int idx, size_t max_depth,
                      jc_seg *segs, size_t *depth, long *budget);

/* Number entries: exact comparison (-1, 0, 1) of two numbers, and JSON
** equality of two values (1 == 1.0, objects in any member order), each in
** its own tape. Bounded by the tapes' depth. */
int jc_tv_numcmp(const jc_tv *a, const jc_tv *b);
int jc_tv_equal(const jc_tape *ta, size_t a, const jc_tape *tb, size_t b);
/* jc_tv_equal charging '*budget' one unit per entry compared: when it
** goes below 0 the answer (then 0) is meaningless and the caller gives up.
** For values from Lua, whose shared tables (JT_REF) expand to exponentially
** many paths; a shared table compared with itself costs nothing. */
int jc_tv_equal_b(const jc_tape *ta, size_t a, const jc_tape *tb, size_t b,
                  long *budget);
/* Is the number 'a' an integer (1, 1.0, 1e30)? */
int jc_tv_integral(const jc_tv *a);
/* Is 'a' an exact decimal multiple of 'b' (> 0)? */
int jc_tv_multiple(const jc_tv *a, const jc_tv *b);

typedef unsigned long long jc_u64;

/* Equal bytes, 8 at a time (the strings of enums, const and uniqueItems
** are short: no libc call; past 32 bytes memcmp); the last word overlaps
** the one before it, as do the two halves of 4 to 7 bytes, so only 0 to 3
** bytes go one by one. */
static JC_INLINE int jc_bytes_eq(const char *a, const char *b, size_t len) {
  if (len > 32) return memcmp(a, b, len) == 0;
  if (len >= 8) {
    jc_u64 x, y;
    size_t o;
    for (o = 0; o + 8 < len; o += 8) {
      memcpy(&x, a + o, 8);
      memcpy(&y, b + o, 8);
      if (x != y) return 0;
    }
    memcpy(&x, a + len - 8, 8);
    memcpy(&y, b + len - 8, 8);
    return x == y;
  }
  if (len >= 4) {
    unsigned x0, y0, x1, y1;
    memcpy(&x0, a, 4);
    memcpy(&y0, b, 4);
    memcpy(&x1, a + len - 4, 4);
    memcpy(&y1, b + len - 4, 4);
    return x0 == y0 && x1 == y1;
  }
  while (len > 0) {
    if (*a++ != *b++) return 0;
    len--;
  }
  return 1;
}
/* Hash such that equal values ('jc_tv_equal') hash equal; '*budget'
** counts entries visited: when it runs out the hash is meaningless. */
jc_u64 jc_tv_hash(const jc_tape *t, size_t i, long *budget);

/* Compact JSON rendering of entry 'i' for messages, at most 'max' bytes
** ("..." appended when cut); object members in byte order of keys. */
#define JC_RENDER_MAX 120
typedef struct jc_rbuf {
  char b[JC_RENDER_MAX + 8];
  size_t n;
  int full;
} jc_rbuf;
void jc_rb_add(jc_rbuf *r, const char *s, size_t len);
void jc_render_string(jc_rbuf *r, const char *s, size_t len);
void jc_fmt_double(double d, char *out, size_t outsz);
void jc_tv_fmt_number(const jc_tv *a, char *out, size_t outsz);
void jc_tv_render(const jc_tape *t, size_t i, jc_rbuf *r, int depth);
/* Push the rendering of entry 'i'. [-0, +1, m] */
void jc_tv_push_render(lua_State *L, const jc_tape *t, size_t i);

/* Line and column (1-based; column in UTF-8 characters) of byte 'off'
** of 'text' (yyjson_locate_pos counts the same way). */
void jc_locate(const char *text, size_t off, unsigned long *line,
               unsigned long *col);

#endif
