/*
** stream.c: an incremental reader for a JSON answer that arrives in chunks
** (a model's streamed reply). 'feed' appends a chunk and advances a small
** scanner over the new bytes only, so its cost is proportional to the
** chunk. The scanner remembers the last point where the text so far can be
** cut and closed ("]", "}", a '"' for an open string) into a valid JSON
** text; 'preview' decodes that closed prefix with the strict parser, for
** display only. 'finish' decodes the whole text with the same strict
** parser as core.decode: the final value exists only then.
**
** Chunks may split anywhere: the scanner's state carries over, and a cut
** inside a string is only ever made at a character boundary (never inside
** a UTF-8 sequence, an escape, or between the two halves of a surrogate
** pair). The scanner is a guide for cutting, not the judge: whatever it
** lets through, the strict parser still checks.
**
** A chunk that would take the text past 'max_bytes' fails the reader for
** good: the err (format/too_big, as core.decode gives for the whole text)
** is kept in the registry and returned by every later 'feed' and by
** 'finish'.
*/
#include "jc.h"
#include "parse.h"

#include <string.h>

#define JC_STREAM_MT "jsoncontract.Stream"

/* Scanner states. */
enum {
  JC_T_VALUE,         /* a value is expected */
  JC_T_VALUE_OR_END,  /* after '[': a value or ']' */
  JC_T_KEY_OR_END,    /* after '{': a member name or '}' */
  JC_T_KEY,           /* after ',' in an object: a member name */
  JC_T_COLON,         /* after a member name */
  JC_T_AFTER,         /* after a value: ',' or a closer (or, at the top,
                         nothing but whitespace) */
  JC_T_STRING,        /* inside a string */
  JC_T_NUMBER,        /* inside a number */
  JC_T_LITERAL,       /* inside true / false / null */
  JC_T_INVALID        /* the text can no longer be JSON */
};

/* Number sub-states (RFC 8259 §6); 'ok' ones end a valid number. */
enum { JC_N_SIGN, JC_N_ZERO, JC_N_INT, JC_N_DOT, JC_N_FRAC, JC_N_E,
       JC_N_ESIGN, JC_N_EXP };
#define JC_N_OK(n) ((n) == JC_N_ZERO || (n) == JC_N_INT || (n) == JC_N_FRAC \
                    || (n) == JC_N_EXP)

typedef struct jc_stream {
  char *buf;              /* every byte fed so far (allocf, 'cap' bytes) */
  size_t len, cap;
  char *stack;            /* open containers, '[' or '{' (allocf) */
  size_t depth, stack_cap;
  size_t max_depth, max_bytes;
  size_t safe;            /* bytes of the longest prefix that the closers of
                             'stack' turn into a valid text */
  size_t boundary;        /* in a string: end of its last whole character */
  int state;
  int is_key;             /* the open string is a member name */
  int complete;           /* a whole top-level value has been read */
  int finished;           /* finish() was called */
  int esc;                /* in a string: 0, 1 after '\', 2..5 in \uXXXX */
  unsigned cp;            /* the \u escape being read */
  unsigned high;          /* a high surrogate waiting for its low half */
  int utf8_left;          /* continuation bytes still expected */
  unsigned char utf8_min, utf8_max;  /* range of the next continuation */
  int num;                /* number sub-state */
  size_t num_end;         /* end of the longest valid prefix of the number
                             being read, or 0 */
  size_t num_start;       /* offset of the number being read */
  int num_eneg;           /* its exponent has a '-' sign */
  int err_ref;            /* registry ref of the too_big err, or LUA_NOREF
                             while the reader has not failed */
  const char *word;       /* literal being read */
  int word_at;
  int busy;               /* a call reads 'buf' while Lua code may run (the
                             too_big parse, preview): a feed from a __gc
                             then raises instead of moving 'buf' */
} jc_stream;

/* ===================================================================== */
/* Memory                                                                */
/* ===================================================================== */

/* Grow the block '*p' of '*cap' bytes to hold at least 'need'. Raises a
** memory error on failure (the old block stays owned by the stream).
** [-0, +0, m] */
static void jc_stream_grow(lua_State *L, char **p, size_t *cap, size_t need) {
  void *ud;
  lua_Alloc alloc = lua_getallocf(L, &ud);
  size_t ncap = *cap ? *cap : 64;
  char *np;
  if (need <= *cap) return;
  while (ncap < need) {
    if (ncap > ((size_t)-1) / 2) { ncap = need; break; }
    ncap *= 2;
  }
  np = (char *)alloc(ud, *p, *cap, ncap);
  if (np == NULL) luaL_error(L, "not enough memory");
  *p = np;
  *cap = ncap;
}

/* ===================================================================== */
/* Scanner                                                               */
/* ===================================================================== */

/* A value ended just before 'pos' (exclusive end). */
static void jc_stream_value_done(jc_stream *st, size_t end) {
  st->safe = end;
  st->state = JC_T_AFTER;
  if (st->depth == 0) st->complete = 1;
}

/* Start a value at byte 'c' (offset 'pos'). Returns 0, or -1 when 'c'
** cannot start one. May raise a memory error. */
static int jc_stream_begin(lua_State *L, jc_stream *st, unsigned char c,
                           size_t pos) {
  switch (c) {
    case '{': case '[':
      if (st->depth >= st->max_depth) return -1;
      jc_stream_grow(L, &st->stack, &st->stack_cap, st->depth + 1);
      st->stack[st->depth++] = (char)c;
      st->safe = pos + 1;
      st->state = c == '{' ? JC_T_KEY_OR_END : JC_T_VALUE_OR_END;
      return 0;
    case '"':
      st->state = JC_T_STRING;
      st->is_key = 0;
      st->esc = 0;
      st->high = 0;
      st->utf8_left = 0;
      st->boundary = pos + 1;
      return 0;
    case '-':
      st->state = JC_T_NUMBER;
      st->num = JC_N_SIGN;
      st->num_end = 0;
      st->num_start = pos;
      st->num_eneg = 0;
      return 0;
    case 't': case 'f': case 'n':
      st->state = JC_T_LITERAL;
      st->word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      st->word_at = 1;
      return 0;
    default:
      if (c >= '0' && c <= '9') {
        st->state = JC_T_NUMBER;
        st->num = c == '0' ? JC_N_ZERO : JC_N_INT;
        st->num_end = pos + 1;
        st->num_start = pos;
        st->num_eneg = 0;
        return 0;
      }
      return -1;
  }
}

/* One byte of a string. Returns 0, or -1 when the string is invalid. */
static int jc_stream_string_byte(jc_stream *st, unsigned char c, size_t pos) {
  if (st->utf8_left > 0) {
    if (c < st->utf8_min || c > st->utf8_max) return -1;
    st->utf8_min = 0x80;
    st->utf8_max = 0xBF;
    if (--st->utf8_left == 0) st->boundary = pos + 1;
    return 0;
  }
  if (st->esc == 1) {
    if (c == 'u') { st->esc = 2; st->cp = 0; return 0; }
    if (st->high || strchr("\"\\/bfnrt", c) == NULL || c == '\0') return -1;
    st->esc = 0;
    st->boundary = pos + 1;
    return 0;
  }
  if (st->esc >= 2) {
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return -1;
    st->cp = st->cp * 16 + d;
    if (++st->esc < 6) return 0;
    st->esc = 0;
    if (st->high) {                       /* must be the low half */
      if (st->cp < 0xDC00 || st->cp > 0xDFFF) return -1;
      st->high = 0;
    } else if (st->cp >= 0xD800 && st->cp <= 0xDBFF) {
      st->high = 1;                       /* no boundary until the low */
      return 0;
    } else if (st->cp >= 0xDC00 && st->cp <= 0xDFFF) {
      return -1;
    }
    st->boundary = pos + 1;
    return 0;
  }
  if (st->high && c != '\\') return -1;   /* a lone high surrogate */
  if (c == '\\') { st->esc = 1; return 0; }
  if (c == '"') {
    if (st->is_key) st->state = JC_T_COLON;
    else jc_stream_value_done(st, pos + 1);
    return 0;
  }
  if (c < 0x20) return -1;
  if (c < 0x80) { st->boundary = pos + 1; return 0; }
  /* RFC 3629 §4: the ranges of the byte after each lead byte. */
  st->utf8_min = 0x80;
  st->utf8_max = 0xBF;
  if (c < 0xC2) return -1;
  if (c < 0xE0) st->utf8_left = 1;
  else if (c < 0xF0) {
    st->utf8_left = 2;
    if (c == 0xE0) st->utf8_min = 0xA0;
    else if (c == 0xED) st->utf8_max = 0x9F;
  } else if (c < 0xF5) {
    st->utf8_left = 3;
    if (c == 0xF0) st->utf8_min = 0x90;
    else if (c == 0xF4) st->utf8_max = 0x8F;
  } else {
    return -1;
  }
  return 0;
}

/* One byte of a number. Returns 1 when the byte is not part of it (the
** number ended before it), 0 when consumed, -1 when invalid. */
static int jc_stream_number_byte(jc_stream *st, unsigned char c) {
  int digit = c >= '0' && c <= '9';
  switch (st->num) {
    case JC_N_SIGN:
      if (!digit) return -1;
      st->num = c == '0' ? JC_N_ZERO : JC_N_INT;
      return 0;
    case JC_N_ZERO:
      if (digit) return -1;               /* leading zero */
      /* fall through */
    case JC_N_INT:
      if (digit) return 0;
      if (c == '.') { st->num = JC_N_DOT; return 0; }
      if (c == 'e' || c == 'E') { st->num = JC_N_E; return 0; }
      return 1;
    case JC_N_DOT:
      if (!digit) return -1;
      st->num = JC_N_FRAC;
      return 0;
    case JC_N_FRAC:
      if (digit) return 0;
      if (c == 'e' || c == 'E') { st->num = JC_N_E; return 0; }
      return 1;
    case JC_N_E:
      if (c == '+' || c == '-') {
        st->num = JC_N_ESIGN;
        st->num_eneg = c == '-';
        return 0;
      }
      /* fall through */
    case JC_N_ESIGN:
      if (!digit) return -1;
      st->num = JC_N_EXP;
      return 0;
    default:                              /* JC_N_EXP */
      return digit ? 0 : 1;
  }
}

#define JC_IS_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')

/* Advance the scanner over buf[from, len). May raise a memory error. */
static void jc_stream_scan(lua_State *L, jc_stream *st, size_t from) {
  const unsigned char *b = (const unsigned char *)st->buf;
  size_t pos;
  int r;
  for (pos = from; pos < st->len && st->state != JC_T_INVALID; pos++) {
    unsigned char c = b[pos];
    switch (st->state) {
      case JC_T_STRING:
        if (jc_stream_string_byte(st, c, pos)) st->state = JC_T_INVALID;
        continue;
      case JC_T_NUMBER:
        r = jc_stream_number_byte(st, c);
        if (r == 0) {
          if (JC_N_OK(st->num)) st->num_end = pos + 1;
          continue;
        }
        if (r < 0) { st->state = JC_T_INVALID; continue; }
        jc_stream_value_done(st, pos);
        break;                            /* 'c' is read again below */
      case JC_T_LITERAL:
        if (c != (unsigned char)st->word[st->word_at]) {
          st->state = JC_T_INVALID;
          continue;
        }
        if (st->word[++st->word_at] == '\0') jc_stream_value_done(st, pos + 1);
        continue;
      default:
        break;
    }
    if (JC_IS_WS(c)) continue;
    switch (st->state) {
      case JC_T_VALUE:
        if (jc_stream_begin(L, st, c, pos)) st->state = JC_T_INVALID;
        break;
      case JC_T_VALUE_OR_END:
      case JC_T_KEY_OR_END:
        if (c == (st->state == JC_T_KEY_OR_END ? '}' : ']')) {
          st->depth--;
          jc_stream_value_done(st, pos + 1);
          break;
        }
        if (st->state == JC_T_VALUE_OR_END) {
          if (jc_stream_begin(L, st, c, pos)) st->state = JC_T_INVALID;
          break;
        }
        /* fall through */
      case JC_T_KEY:
        if (c != '"') { st->state = JC_T_INVALID; break; }
        jc_stream_begin(L, st, c, pos);
        st->is_key = 1;
        break;
      case JC_T_COLON:
        st->state = c == ':' ? JC_T_VALUE : JC_T_INVALID;
        break;
      case JC_T_AFTER:
        if (st->depth == 0) { st->state = JC_T_INVALID; break; }
        if (c == ',') {
          st->state = st->stack[st->depth - 1] == '{' ? JC_T_KEY : JC_T_VALUE;
        } else if (c == (st->stack[st->depth - 1] == '{' ? '}' : ']')) {
          st->depth--;
          jc_stream_value_done(st, pos + 1);
        } else {
          st->state = JC_T_INVALID;
        }
        break;
      default:
        break;
    }
  }
}

/* ===================================================================== */
/* Methods                                                               */
/* ===================================================================== */

static jc_stream *jc_check_stream(lua_State *L) {
  return (jc_stream *)luaL_checkudata(L, 1, JC_STREAM_MT);
}

/*
** core.stream_new([opts]) -> reader
** A new incremental reader. opts (table, optional) as for core.decode:
**   max_depth  integer 1..3000, default 1000 (levels)
**   max_bytes  integer >= 0, default 64 MiB: the most bytes 'feed' takes
** Returns a userdata "jsoncontract.Stream" whose memory Lua frees (__gc).
** Raises on bad options.
** Stack: [-0, +1, m]
*/
static int jc_stream_new(lua_State *L) {
  jc_stream *st;
  size_t max_depth, max_bytes;
  luaL_argcheck(L, lua_gettop(L) <= 1, 2, "no more than 1 argument expected");
  jc_parse_opts(L, 1, &max_depth, &max_bytes);
  st = (jc_stream *)jc_newuserdata(L, sizeof *st);
  memset(st, 0, sizeof *st);
  st->max_depth = max_depth;
  st->max_bytes = max_bytes;
  st->state = JC_T_VALUE;
  st->err_ref = LUA_NOREF;
  luaL_setmetatable(L, JC_STREAM_MT);
  return 1;
}

/*
** reader:feed(chunk) -> true | nil, err
** Append 'chunk' (string, any bytes, may be empty; may split a character
** or an escape) to the text. Cost proportional to #chunk.
** Fails (nil, err) with category "format", kind "too_big" when the text
** would exceed 'max_bytes': err is what core.decode gives for the whole
** text (offset max_bytes, its line and column). The reader is then failed:
** every later feed() and finish() return nil and that same err table.
** Raises when 'chunk' is not a string or after finish(), and "stream is in
** use (called again from inside its own call, e.g. by a __gc)" when a
** finalizer feeds the reader while its feed or preview is reading the
** text (the text would move under it).
** Stack: [-0, +1 or +2, m]
*/
/* The too_big err of the failed reader at index 1, under jc_pcall_busy:
** the parser reads 'buf' while its allocations may run a __gc, and a
** feed from there must not move it. Pushes nil, err. [-0, +2, m] */
static int jc_stream_fail(lua_State *L) {
  jc_stream *st = (jc_stream *)lua_touserdata(L, 1);
  lua_settop(L, 1);
  jc_parse_text(L, st->buf, st->len, st->max_depth, st->max_bytes);
  lua_pushvalue(L, -1);
  st->err_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 2;
}

static const char jc_stream_inuse[] =
  "stream is in use (called again from inside its own call, e.g. by a "
  "__gc)";

static int jc_stream_feed(lua_State *L) {
  jc_stream *st = jc_check_stream(L);
  size_t n, from;
  const char *chunk = luaL_checklstring(L, 2, &n);
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 1 argument expected");
  if (st->finished) return luaL_error(L, "stream: feed after finish");
  if (st->busy) return luaL_error(L, jc_stream_inuse);
  if (st->err_ref != LUA_NOREF) {
    lua_pushnil(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, st->err_ref);
    return 2;
  }
  /* 'len' is past max_bytes when a raise (a memory error) stopped the
  ** too_big path before its err was kept: that path again, taking 0 */
  if (st->len > st->max_bytes || n > st->max_bytes - st->len) {
    /* keep max_bytes + 1 bytes of the text, enough for the parser to
    ** give decode's too_big err (it locates offset max_bytes); the
    ** scanner is not run on them: the reader is failed */
    size_t take = st->len > st->max_bytes ? 0 : st->max_bytes + 1 - st->len;
    int rc;
    jc_stream_grow(L, &st->buf, &st->cap, st->max_bytes + 2);
    memcpy(st->buf + st->len, chunk, take);
    st->len += take;
    st->buf[st->len] = '\0';
    st->state = JC_T_INVALID;
    lua_settop(L, 1);
    lua_pushvalue(L, 1);
    rc = jc_pcall_busy(L, jc_stream_fail, 1, &st->busy);
    if (rc != 0) return lua_error(L);
    return 2;
  }
  /* one spare byte: the '\0' the parser expects after the text */
  jc_stream_grow(L, &st->buf, &st->cap, st->len + n + 1);
  memcpy(st->buf + st->len, chunk, n);
  from = st->len;
  st->len += n;
  st->buf[st->len] = '\0';
  jc_stream_scan(L, st, from);
  lua_pushboolean(L, 1);
  return 1;
}

/* The strict parser rejected the closed prefix with the err at the top:
** is that final, whatever bytes come next? A duplicate member name is (both
** names are whole and in the prefix). A number out of range is, unless it
** is the number still being read and more bytes may shrink it: without its
** exponent digits yet (an exponent may follow), or with a '-' exponent
** (more digits make it smaller). Other kinds: not known, so not final.
** Stack: [-0, +0, m] */
static int jc_stream_final(lua_State *L, jc_stream *st) {
  const char *kind;
  size_t off;
  int final = 0;
  lua_getfield(L, -1, "kind");
  lua_getfield(L, -2, "offset");
  kind = lua_tostring(L, -2);
  off = (size_t)lua_tointeger(L, -1);
  if (kind != NULL && strcmp(kind, "duplicate_key") == 0) {
    final = 1;
  } else if (kind != NULL && strcmp(kind, "number_out_of_range") == 0) {
    final = !(st->state == JC_T_NUMBER && off >= st->num_start
              && (st->num != JC_N_EXP || st->num_eneg));
  }
  lua_pop(L, 2);
  return final;
}

/*
** reader:preview() -> value | nil, meta
** Best-effort value of the text so far, for display only: the longest
** prefix that can be closed, with open strings and containers closed
** (a member whose value has not started is left out; a string shows only
** whole characters; a number being read shows its longest valid prefix:
** "2.5e" shows 2.5). 'bytes' never decreases from one preview to the next
** unless the text turns invalid; values shown are final except the string
** or number still arriving.
** Never raises on any input. Returns value (nil when there is nothing to
** show yet, or the closed prefix does not decode) and
**   meta = { preview = true, complete = boolean, bytes = integer,
**            invalid = true | nil }
** where complete is true once a whole top-level value has been read,
** bytes is the length of the prefix shown, and invalid is true when the
** text can no longer become JSON (finish() will say why): the scanner saw
** a syntax error, or the strict parser rejects the closed prefix for a
** reason no later byte can undo (see jc_stream_final), or a feed() failed
** with too_big (the value is then nil and bytes 0).
** Stack: [-0, +2, m]
*/
static int jc_stream_preview_body(lua_State *L);

static int jc_stream_preview(lua_State *L) {
  jc_stream *st = jc_check_stream(L);
  luaL_argcheck(L, lua_gettop(L) <= 1, 2, "no argument expected");
  /* the closed prefix is copied from 'buf' by allocating calls: a feed
  ** from a __gc there would move it */
  lua_pushvalue(L, 1);
  if (jc_pcall_busy(L, jc_stream_preview_body, 1, &st->busy) != 0)
    return lua_error(L);
  return 2;
}

/* The body of preview under jc_pcall_busy: 1 the reader. [-0, +2, m] */
static int jc_stream_preview_body(lua_State *L) {
  jc_stream *st = (jc_stream *)lua_touserdata(L, 1);
  luaL_Buffer b;
  size_t cut = st->safe, i, len;
  const char *text;
  int in_string = 0, n, invalid = st->state == JC_T_INVALID;
  if (st->err_ref != LUA_NOREF) {
    cut = 0;                             /* a failed reader shows nothing */
  } else if (st->state == JC_T_STRING && !st->is_key) {
    cut = st->boundary;
    in_string = 1;
  } else if (st->state == JC_T_NUMBER && st->num_end) {
    cut = st->num_end;
  }
  lua_settop(L, 1);
  if (cut == 0) {
    lua_pushnil(L);                      /* 2: value */
  } else {
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, st->buf, cut);
    if (in_string) luaL_addchar(&b, '"');
    for (i = st->depth; i > 0; i--)
      luaL_addchar(&b, st->stack[i - 1] == '{' ? '}' : ']');
    luaL_pushresult(&b);                 /* 2: closed prefix */
    text = lua_tolstring(L, 2, &len);
    lua_pushnil(L);
    lua_pushnil(L);                      /* 3, 4: slots for the parser */
    n = jc_parse_text(L, text, len, st->max_depth, (size_t)-1);
    if (n != 1 && !invalid) invalid = jc_stream_final(L, st);
    lua_replace(L, 2);
    lua_settop(L, n == 1 ? 2 : 1);
    if (n != 1) lua_pushnil(L);
  }
  lua_createtable(L, 0, 4);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "preview");
  lua_pushboolean(L, st->complete && st->state == JC_T_AFTER);
  lua_setfield(L, -2, "complete");
  lua_pushinteger(L, (lua_Integer)cut);
  lua_setfield(L, -2, "bytes");
  if (invalid) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "invalid");
  }
  return 2;
}

/*
** reader:finish() -> value | nil, err
** The end of the text: decode everything fed with the strict parser,
** exactly as core.decode(text, opts) would (same value, same kinds and
** positions). After a feed() that failed with too_big: nil and that err.
** The reader then takes no more chunks; finish() may be called again and
** gives the same answer.
** Stack: [-0, +1 or +2, m]
*/
static int jc_stream_finish(lua_State *L) {
  jc_stream *st = jc_check_stream(L);
  luaL_argcheck(L, lua_gettop(L) <= 1, 2, "no argument expected");
  st->finished = 1;
  lua_settop(L, 1);
  if (st->err_ref != LUA_NOREF) {
    lua_pushnil(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, st->err_ref);
    return 2;
  }
  /* the parser's text must be a string on the stack ('buf' is not
  ** referenced by Lua, but is only freed by __gc of 'st', at slot 1); a
  ** __gc run by the parser cannot move it: 'finished' is set, so feed
  ** raises */
  lua_pushnil(L);
  return jc_parse_text(L, st->len ? st->buf : "", st->len, st->max_depth,
                       st->max_bytes);
}

/* __gc: free the buffers (idempotent). [-0, +0, -] */
static int jc_stream_gc(lua_State *L) {
  jc_stream *st = (jc_stream *)luaL_checkudata(L, 1, JC_STREAM_MT);
  void *ud;
  lua_Alloc alloc = lua_getallocf(L, &ud);
  if (st->buf) alloc(ud, st->buf, st->cap, 0);
  if (st->stack) alloc(ud, st->stack, st->stack_cap, 0);
  st->buf = st->stack = NULL;
  st->cap = st->stack_cap = st->len = st->depth = 0;
  if (st->err_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, st->err_ref);
    st->err_ref = LUA_NOREF;
  }
  return 0;
}

static const luaL_Reg jc_stream_methods[] = {
  {"feed", jc_stream_feed},
  {"preview", jc_stream_preview},
  {"finish", jc_stream_finish},
  {NULL, NULL}
};

static const luaL_Reg jc_stream_meta[] = {
  {"__gc", jc_stream_gc},
  {NULL, NULL}
};

static const luaL_Reg jc_stream_funcs[] = {
  {"stream_new", jc_stream_new},
  {NULL, NULL}
};

void jc_stream_open(lua_State *L) {
  if (luaL_newmetatable(L, JC_STREAM_MT)) {
    luaL_setfuncs(L, jc_stream_meta, 0);
    lua_newtable(L);
    luaL_setfuncs(L, jc_stream_methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, JC_STREAM_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, jc_stream_funcs, 0);
}
