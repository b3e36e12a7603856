/*
** parse.c: the format gate. A strict RFC 8259 parser that builds Lua values
** directly from the text (no intermediate tree), and reports every failure
** as data: nil plus an err table with a stable 'kind', the byte offset and
** the line and column of the offending byte.
**
** The parser is not C-recursive: open containers live on the Lua stack
** (the table, and for an object the pending member name) and their
** bookkeeping in a frame array that starts on the C stack and moves into a
** userdata when it grows. Every temporary is Lua-owned, so an error raised
** by Lua (memory) leaks nothing.
*/
#include "jc.h"
#include "parse.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef JC_MAX_DEPTH
#define JC_MAX_DEPTH 1000               /* default 'max_depth' (levels) */
#endif
#ifndef JC_MAX_DEPTH_LIMIT
#define JC_MAX_DEPTH_LIMIT 3000         /* largest 'max_depth' accepted */
#endif
#ifndef JC_MAX_BYTES
#define JC_MAX_BYTES (64 * 1024 * 1024) /* default 'max_bytes' (bytes) */
#endif

/* Fixed stack slots of a parse, above 'base' (the top on entry minus 2:
** for decode() the text and the options); values are built above them. */
#define JC_S_ARRMT 3    /* the array metatable */
#define JC_S_FRAMES 4   /* userdata holding the frames once they outgrow C */
#define JC_S_SCRATCH 5  /* userdata: decoded strings with escapes, numbers */

#define JC_LOCAL_FRAMES 32

typedef struct jc_frame {
  int base;               /* stack index of the container table */
  int is_object;
  size_t count;           /* elements / members stored so far */
  size_t key_off;         /* raw text of the current member name, for */
  size_t key_len;         /* messages */
} jc_frame;

typedef struct jc_parser {
  lua_State *L;
  int base;                     /* the fixed slots are base + JC_S_* */
  const unsigned char *start;
  const unsigned char *end;     /* start + len; *end == '\0' (Lua string) */
  jc_frame *frames;
  size_t nframes;               /* capacity of 'frames' */
  size_t depth;
  size_t max_depth;
  unsigned char *scratch;
  size_t scratch_cap;
  char decpoint;                /* the locale's decimal point, for strtod */
  /* the error, once one is found */
  const char *kind;
  const unsigned char *at;
  const char *tail;
  int duplicate;                /* pointer and key pushed (slots 3, 4) */
  char head[400];
} jc_parser;

/* ===================================================================== */
/* Character classes                                                     */
/* ===================================================================== */

/* 0: plain ASCII inside a string; 1: '"'; 2: '\\'; 3: control (incl. the
** terminating '\0'); 4: first byte of a multi-byte sequence or invalid. */
static const unsigned char jc_strclass[256] = {
  3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3, 3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,
  0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4, 4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,
  4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4, 4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,
  4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4, 4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,
  4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4, 4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4
};

#define JC_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
#define JC_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define JC_SKIP_WS(s) while (JC_WS(*(s))) (s)++

size_t jc_utf8_len(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;                       /* continuation, overlong */
  if (c < 0xE0) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    if (c == 0xE0) { if (s[1] < 0xA0 || s[1] > 0xBF) return 0; }  /* overlong */
    else if (c == 0xED) { if (s[1] < 0x80 || s[1] > 0x9F) return 0; } /* D800.. */
    else if ((s[1] & 0xC0) != 0x80) return 0;
    return (s[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c < 0xF5) {
    if (c == 0xF0) { if (s[1] < 0x90 || s[1] > 0xBF) return 0; }  /* overlong */
    else if (c == 0xF4) { if (s[1] < 0x80 || s[1] > 0x8F) return 0; } /* >10FFFF */
    else if ((s[1] & 0xC0) != 0x80) return 0;
    if ((s[2] & 0xC0) != 0x80) return 0;
    return (s[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* Code point of the well-formed sequence of 'n' bytes at 's'. */
static unsigned long jc_utf8_decode(const unsigned char *s, size_t n) {
  switch (n) {
    case 1: return s[0];
    case 2: return ((unsigned long)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((unsigned long)(s[0] & 0x0F) << 12)
                   | ((unsigned long)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default: return ((unsigned long)(s[0] & 0x07) << 18)
                    | ((unsigned long)(s[1] & 0x3F) << 12)
                    | ((unsigned long)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
  }
}

/* Write code point 'cp' (not a surrogate, <= 0x10FFFF) as UTF-8 at 'o';
** returns the number of bytes written. */
static size_t jc_utf8_encode(unsigned long cp, unsigned char *o) {
  if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ===================================================================== */
/* Errors                                                                */
/* ===================================================================== */

/* Describe the byte at 'at' for a message: 'x', '“' (U+201C), U+0009,
** byte 0xFF or "end of text". */
static void jc_describe(const jc_parser *p, const unsigned char *at,
                        char *out, size_t n) {
  size_t len;
  if (at >= p->end) { snprintf(out, n, "end of text"); return; }
  if (*at == '\'') { snprintf(out, n, "\"'\""); return; }
  if (*at > 0x20 && *at < 0x7F) { snprintf(out, n, "'%c'", *at); return; }
  if (*at < 0x80) { snprintf(out, n, "U+%04X", (unsigned)*at); return; }
  len = jc_utf8_len(at);
  if (len == 0) { snprintf(out, n, "byte 0x%02X", (unsigned)*at); return; }
  snprintf(out, n, "'%.*s' (U+%04lX)", (int)len, (const char *)at,
           jc_utf8_decode(at, len));
}

/* Copy at most 'max' bytes of s[0..len) into 'out' for a message, cut at a
** character boundary, "..." appended when cut. */
static void jc_excerpt(const char *s, size_t len, char *out, size_t max) {
  size_t n = len;
  if (n > max) {
    n = max;
    while (n > 0 && (((unsigned char)s[n]) & 0xC0) == 0x80) n--;
  }
  memcpy(out, s, n);
  if (n < len) { memcpy(out + n, "...", 3); n += 3; }
  out[n] = '\0';
}

/* Record an error: message = head .. "line L, column C" .. tail.
** Always returns -1 so callers can 'return jc_fail(...)'. */
static int jc_fail(jc_parser *p, const char *kind, const unsigned char *at,
                   const char *tail) {
  p->kind = kind;
  p->at = at;
  p->tail = tail;
  return -1;
}

/* 'unexpected character X at ' or 'unexpected end of text at ' + tail. */
static int jc_fail_unexpected(jc_parser *p, const unsigned char *at,
                              const char *tail) {
  char what[48];
  if (at >= p->end) {
    snprintf(p->head, sizeof p->head, "unexpected end of text at ");
    return jc_fail(p, "unexpected_end", at, tail);
  }
  jc_describe(p, at, what, sizeof what);
  snprintf(p->head, sizeof p->head, "unexpected character %s at ", what);
  return jc_fail(p, "unexpected_character", at, tail);
}

/* Push the JSON Pointer of the member or element being parsed.
** [-0, +1, m] */
static void jc_push_pointer(jc_parser *p) {
  lua_State *L = p->L;
  luaL_Buffer b;
  size_t i, len, j;
  const char *k;
  char num[32];
  luaL_buffinit(L, &b);
  for (i = 0; i < p->depth; i++) {
    const jc_frame *f = &p->frames[i];
    luaL_addchar(&b, '/');
    if (f->is_object) {
      k = lua_tolstring(L, f->base + 1, &len);
      for (j = 0; j < len; j++) {
        if (k[j] == '~') luaL_addstring(&b, "~0");
        else if (k[j] == '/') luaL_addstring(&b, "~1");
        else luaL_addchar(&b, k[j]);
      }
    } else {
      snprintf(num, sizeof num, "%lu", (unsigned long)f->count);
      luaL_addstring(&b, num);
    }
  }
  luaL_pushresult(&b);
}

/* ===================================================================== */
/* Scalars                                                               */
/* ===================================================================== */

/* Make 'scratch' hold at least 'n' bytes (contents not kept). [-0, +0, m] */
static void jc_scratch(jc_parser *p, size_t n) {
  size_t cap;
  if (n <= p->scratch_cap) return;
  cap = p->scratch_cap ? p->scratch_cap : 256;
  while (cap < n) cap = cap > ((size_t)-1) / 2 ? n : cap * 2;
  p->scratch = (unsigned char *)jc_newuserdata(p->L, cap);
  p->scratch_cap = cap;
  lua_replace(p->L, p->base + JC_S_SCRATCH);
}

/* Read 4 hex digits at 's'; returns the value, or -1 with '*bad' set to
** the first byte that is not a hex digit (never reads past it). */
static long jc_hex4(const unsigned char *s, const unsigned char **bad) {
  long v = 0;
  int i;
  for (i = 0; i < 4; i++) {
    unsigned char c = s[i];
    if (c >= '0' && c <= '9') v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v = v * 16 + (c - 'A' + 10);
    else { *bad = s + i; return -1; }
  }
  return v;
}

/* Error for a byte that stops a string: end of text, control character
** or invalid UTF-8. */
static int jc_string_stop(jc_parser *p, const unsigned char *s) {
  if (s >= p->end) {
    snprintf(p->head, sizeof p->head,
             "unexpected end of text inside a string at ");
    return jc_fail(p, "unexpected_end", s, ": expected '\"'");
  }
  if (*s < 0x20) {
    snprintf(p->head, sizeof p->head,
             "unescaped control character U+%04X in a string at ",
             (unsigned)*s);
    return jc_fail(p, "control_character", s,
                   ": write it as an escape such as \\n, \\t or \\u00XX");
  }
  snprintf(p->head, sizeof p->head, "invalid UTF-8 byte 0x%02X in a string at ",
           (unsigned)*s);
  return jc_fail(p, "invalid_utf8", s, "");
}

/* The slow path of 'jc_string': the string at 'run' has an escape at 's'.
** Decodes into 'scratch' and pushes the result. [-0, +1, m] */
static int jc_string_escaped(jc_parser *p, const unsigned char **ps,
                             const unsigned char *run,
                             const unsigned char *s) {
  const unsigned char *q = s, *end = p->end, *bad = NULL;
  unsigned char *o;
  long cp, lo;
  size_t n;
  /* The decoded string is never longer than its raw text. */
  while (q < end && *q != '"') q += (*q == '\\' && q + 1 < end) ? 2 : 1;
  jc_scratch(p, (size_t)(q - run) + 1);
  o = p->scratch;
  memcpy(o, run, (size_t)(s - run));
  o += s - run;
  for (;;) {
    unsigned char c = *s;
    switch (jc_strclass[c]) {
      case 0: *o++ = c; s++; continue;
      case 1:
        lua_pushlstring(p->L, (const char *)p->scratch,
                        (size_t)(o - p->scratch));
        *ps = s + 1;
        return 0;
      case 4:
        n = jc_utf8_len(s);
        if (n == 0) return jc_string_stop(p, s);
        memcpy(o, s, n);
        o += n;
        s += n;
        continue;
      case 3: return jc_string_stop(p, s);
      default: break;
    }
    switch (s[1]) {  /* a backslash */
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '/': *o++ = '/'; break;
      case 'b': *o++ = '\b'; break;
      case 'f': *o++ = '\f'; break;
      case 'n': *o++ = '\n'; break;
      case 'r': *o++ = '\r'; break;
      case 't': *o++ = '\t'; break;
      case 'u':
        cp = jc_hex4(s + 2, &bad);
        if (cp < 0) goto badhex;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          snprintf(p->head, sizeof p->head,
                   "lone low surrogate \\u%04lX in a string at ", cp);
          return jc_fail(p, "invalid_surrogate", s,
                         ": a low surrogate must follow a high one");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (s[6] != '\\' || s[7] != 'u') {
            snprintf(p->head, sizeof p->head,
                     "lone high surrogate \\u%04lX in a string at ", cp);
            return jc_fail(p, "invalid_surrogate", s,
                           ": expected a low surrogate \\uDC00-\\uDFFF next");
          }
          lo = jc_hex4(s + 8, &bad);
          if (lo < 0) goto badhex;
          if (lo < 0xDC00 || lo > 0xDFFF) {
            snprintf(p->head, sizeof p->head,
                     "high surrogate \\u%04lX followed by \\u%04lX at ", cp, lo);
            return jc_fail(p, "invalid_surrogate", s,
                           ": expected a low surrogate \\uDC00-\\uDFFF");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          s += 6;
        }
        o += jc_utf8_encode((unsigned long)cp, o);
        s += 4;
        break;
      default:
        if (s + 1 >= end) return jc_string_stop(p, s + 1);
        {
          char what[48];
          jc_describe(p, s + 1, what, sizeof what);
          snprintf(p->head, sizeof p->head,
                   "invalid escape '\\' followed by %s at ", what);
        }
        return jc_fail(p, "invalid_escape", s,
                       ": valid escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                       "\\uXXXX");
    }
    s += 2;
  }
badhex:
  if (bad >= end) return jc_string_stop(p, bad);
  snprintf(p->head, sizeof p->head, "invalid \\u escape at ");
  return jc_fail(p, "invalid_escape", bad, ": expected 4 hex digits");
}

/* Skip the plain ASCII run at 's' (bytes 0x20..0x7F other than '"' and
** '\\'), reading at most up to 'end' (then byte by byte: the input is
** NUL-terminated, and NUL stops the run); returns the first other byte. */
static const unsigned char *jc_skip_plain(const unsigned char *s,
                                          const unsigned char *end) {
  s = jc_scan_plain8(s, end);
  while (jc_strclass[*s] == 0) s++;
  return s;
}

/* Parse the string whose opening quote is at '*ps'; push it and move '*ps'
** past the closing quote. [-0, +1, m] */
static int jc_string(jc_parser *p, const unsigned char **ps) {
  const unsigned char *s = *ps + 1, *run = s, *end = p->end;
  size_t n;
  for (;;) {
    s = jc_skip_plain(s, end);
    switch (jc_strclass[*s]) {
      case 0: s++; continue;
      case 1:
        lua_pushlstring(p->L, (const char *)run, (size_t)(s - run));
        *ps = s + 1;
        return 0;
      case 2: return jc_string_escaped(p, ps, run, s);
      case 4:
        n = jc_utf8_len(s);
        if (n == 0) return jc_string_stop(p, s);
        s += n;
        continue;
      default: return jc_string_stop(p, s);
    }
  }
}

static int jc_bad_number(jc_parser *p, const unsigned char *at,
                         const char *why) {
  snprintf(p->head, sizeof p->head, "invalid number at ");
  return jc_fail(p, "invalid_number", at, why);
}

/* Parse the number at '*ps' (RFC 8259 §6), push it, advance '*ps'.
** An integer lexeme that fits int64 becomes a Lua integer (5.3+);
** everything else a double. [-0, +1, m] */
static int jc_number(jc_parser *p, const unsigned char **ps) {
  const unsigned char *b = *ps, *s = b, *digits;
  int neg = 0, isint = 1;
  size_t len;
  char local[64], *buf, *e, *dp;
  double d;
  if (*s == '-') { neg = 1; s++; }
  digits = s;
  if (*s == '0') {
    s++;
    if (JC_DIGIT(*s))
      return jc_bad_number(p, s, ": leading zeros are not allowed");
  } else if (*s >= '1' && *s <= '9') {
    while (JC_DIGIT(*s)) s++;
  } else if (*s == 'I') {
    return jc_bad_number(p, b, ": NaN and Infinity are not JSON numbers");
  } else {
    return jc_bad_number(p, s, ": expected a digit after '-'");
  }
  if (*s == '.') {
    s++;
    if (!JC_DIGIT(*s))
      return jc_bad_number(p, s, ": expected a digit after '.'");
    while (JC_DIGIT(*s)) s++;
    isint = 0;
  }
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!JC_DIGIT(*s))
      return jc_bad_number(p, s, ": expected a digit in the exponent");
    while (JC_DIGIT(*s)) s++;
    isint = 0;
  }
  if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '.'
      || *s == '+' || *s == '-' || *s == '_')
    return jc_bad_number(p, s, "");
  *ps = s;
  len = (size_t)(s - b);
  if (isint && s - digits <= 18) {      /* < 10^18: exact in int64 */
    long long v = 0;
    for (; digits < s; digits++) v = v * 10 + (*digits - '0');
    if (neg) v = -v;
#if JC_HAVE_INTEGER
    lua_pushinteger(p->L, (lua_Integer)v);
#else
    lua_pushnumber(p->L, (lua_Number)v);  /* correctly rounded */
#endif
    return 0;
  }
#if JC_HAVE_INTEGER
  if (isint) {                          /* 19 digits or more */
    unsigned long long v = 0, lim = neg ? 9223372036854775808ULL
                                        : 9223372036854775807ULL;
    int fits = 1;
    for (; digits < s; digits++) {
      unsigned d1 = (unsigned)(*digits - '0');
      if (v > (lim - d1) / 10) { fits = 0; break; }
      v = v * 10 + d1;
    }
    if (fits) {
      if (neg && v == 9223372036854775808ULL)
        lua_pushinteger(p->L, (lua_Integer)(-9223372036854775807LL - 1));
      else
        lua_pushinteger(p->L, neg ? -(lua_Integer)v : (lua_Integer)v);
      return 0;
    }
  }
#endif
  if (len < sizeof local) {
    buf = local;
  } else {
    jc_scratch(p, len + 1);
    buf = (char *)p->scratch;
  }
  memcpy(buf, b, len);
  buf[len] = '\0';
  if (p->decpoint != '.' && (dp = strchr(buf, '.')) != NULL)
    *dp = p->decpoint;
  d = strtod(buf, &e);
  if (isinf(d) || e != buf + len) {
    snprintf(p->head, sizeof p->head, "number out of range at ");
    return jc_fail(p, "number_out_of_range", b,
                   ": the magnitude must be below 1.8e308");
  }
  lua_pushnumber(p->L, (lua_Number)d);
  return 0;
}

/* A literal that starts like 'word' but is not it. */
static int jc_bad_literal(jc_parser *p, const unsigned char *s,
                          const char *word) {
  size_t i = 0;
  while (word[i] && s[i] == (unsigned char)word[i]) i++;
  if (s + i >= p->end) {
    snprintf(p->head, sizeof p->head, "unexpected end of text at ");
    p->tail = word[0] == 't' ? ": expected 'true'"
            : word[0] == 'f' ? ": expected 'false'" : ": expected 'null'";
    return jc_fail(p, "unexpected_end", s + i, p->tail);
  }
  return jc_fail_unexpected(p, s + i,
                            word[0] == 't' ? ": expected 'true'"
                            : word[0] == 'f' ? ": expected 'false'"
                            : ": expected 'null'");
}

/* ===================================================================== */
/* Containers and the main loop                                          */
/* ===================================================================== */

/* Open a container at 'at': push its table and a frame. [-0, +1, m] */
static int jc_open(jc_parser *p, const unsigned char *at, int is_object) {
  lua_State *L = p->L;
  jc_frame *f;
  if (p->depth >= p->max_depth || !lua_checkstack(L, 8)) {
    snprintf(p->head, sizeof p->head,
             "nesting deeper than %lu levels at ", (unsigned long)p->max_depth);
    return jc_fail(p, "too_deep", at, "");
  }
  if (p->depth == p->nframes) {
    size_t cap = p->nframes * 2;
    jc_frame *nf = (jc_frame *)jc_newuserdata(L, cap * sizeof(jc_frame));
    memcpy(nf, p->frames, p->nframes * sizeof(jc_frame));
    lua_replace(L, p->base + JC_S_FRAMES);
    p->frames = nf;
    p->nframes = cap;
  }
  /* A small preallocation saves the first rehashes of typical objects. */
  if (is_object) {
    lua_createtable(L, 0, 4);
  } else {
    lua_createtable(L, 4, 0);
    lua_pushvalue(L, p->base + JC_S_ARRMT);
    lua_setmetatable(L, -2);
  }
  f = &p->frames[p->depth++];
  f->base = lua_gettop(L);
  f->is_object = is_object;
  f->count = 0;
  f->key_off = f->key_len = 0;
  return 0;
}

/* Parse the whole text; on success the value is on top. */
static int jc_parse_run(jc_parser *p) {
  lua_State *L = p->L;
  const unsigned char *s = p->start, *end = p->end;
  jc_frame *f;
  int after_comma = 0;
  char key[80];

  JC_SKIP_WS(s);
  if (s >= end) {
    snprintf(p->head, sizeof p->head, "empty text at ");
    return jc_fail(p, "empty", s, ": expected a JSON value");
  }
  if (end - p->start >= 3 && p->start[0] == 0xEF && p->start[1] == 0xBB
      && p->start[2] == 0xBF) {
    snprintf(p->head, sizeof p->head, "byte order mark (U+FEFF) at ");
    return jc_fail(p, "unexpected_character", p->start,
                   ": JSON text must not start with a byte order mark");
  }

value:
  JC_SKIP_WS(s);
  switch (*s) {
    case '{':
      if (jc_open(p, s, 1)) return -1;
      s++;
      JC_SKIP_WS(s);
      if (*s == '}') { s++; p->depth--; goto done; }
      after_comma = 0;
      goto key;
    case '[':
      if (jc_open(p, s, 0)) return -1;
      s++;
      JC_SKIP_WS(s);
      if (*s == ']') { s++; p->depth--; goto done; }
      after_comma = 0;
      goto value;
    case '"':
      if (jc_string(p, &s)) return -1;
      goto done;
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      if (jc_number(p, &s)) return -1;
      goto done;
    case 't':
      if (s[1] != 'r' || s[2] != 'u' || s[3] != 'e')
        return jc_bad_literal(p, s, "true");
      lua_pushboolean(L, 1);
      s += 4;
      goto done;
    case 'f':
      if (s[1] != 'a' || s[2] != 'l' || s[3] != 's' || s[4] != 'e')
        return jc_bad_literal(p, s, "false");
      lua_pushboolean(L, 0);
      s += 5;
      goto done;
    case 'n':
      if (s[1] != 'u' || s[2] != 'l' || s[3] != 'l')
        return jc_bad_literal(p, s, "null");
      jc_pushnull(L);
      s += 4;
      goto done;
    case '+':
      return jc_bad_number(p, s, ": a number must not start with '+'");
    case '.':
      return jc_bad_number(p, s, ": a number must start with a digit");
    case 'N': case 'I':
      if ((s[0] == 'N' && s[1] == 'a' && s[2] == 'N')
          || (s[0] == 'I' && s[1] == 'n' && s[2] == 'f'))
        return jc_bad_number(p, s, ": NaN and Infinity are not JSON numbers");
      return jc_fail_unexpected(p, s, ": expected a JSON value");
    case ']': case '}':
      if (after_comma && p->depth > 0) {
        snprintf(p->head, sizeof p->head, "trailing comma before '%c' at ",
                 *s);
        return jc_fail(p, "unexpected_character", s, "");
      }
      return jc_fail_unexpected(p, s, ": expected a JSON value");
    default:
      return jc_fail_unexpected(p, s, ": expected a JSON value");
  }

key:
  f = &p->frames[p->depth - 1];
  if (*s != '"') {
    if (after_comma && *s == '}') {
      snprintf(p->head, sizeof p->head, "trailing comma before '}' at ");
      return jc_fail(p, "unexpected_character", s, "");
    }
    return jc_fail_unexpected(p, s, ": expected a member name in double quotes");
  }
  f->key_off = (size_t)(s + 1 - p->start);
  if (jc_string(p, &s)) return -1;
  f->key_len = (size_t)(s - 1 - p->start) - f->key_off;
  lua_pushvalue(L, -1);
  lua_rawget(L, f->base);
  if (!lua_isnil(L, -1)) {
    char ptr[220];
    size_t plen;
    const char *pstr;
    lua_pop(L, 1);
    jc_push_pointer(p);
    pstr = lua_tolstring(L, -1, &plen);
    jc_excerpt(pstr, plen, ptr, 200);
    jc_excerpt((const char *)p->start + f->key_off, f->key_len, key, 60);
    snprintf(p->head, sizeof p->head, "duplicate key \"%s\" at %s (", key, ptr);
    lua_replace(L, p->base + JC_S_ARRMT);   /* pointer */
    lua_replace(L, p->base + JC_S_FRAMES);  /* key; frames not needed now */
    p->duplicate = 1;
    return jc_fail(p, "duplicate_key", p->start + f->key_off - 1, ")");
  }
  lua_pop(L, 1);
  JC_SKIP_WS(s);
  if (*s != ':') {
    char what[48];
    jc_excerpt((const char *)p->start + f->key_off, f->key_len, key, 60);
    if (s >= end) {
      snprintf(p->head, sizeof p->head,
               "unexpected end of text after member name \"%s\" at ", key);
      return jc_fail(p, "unexpected_end", s, ": expected ':'");
    }
    jc_describe(p, s, what, sizeof what);
    snprintf(p->head, sizeof p->head,
             "expected ':' after member name \"%s\", found %s at ", key, what);
    return jc_fail(p, "unexpected_character", s, "");
  }
  s++;
  after_comma = 0;
  goto value;

done:
  if (p->depth == 0) goto finish;
  f = &p->frames[p->depth - 1];
  if (f->is_object) {
    lua_rawset(L, f->base);
    f->count++;
    JC_SKIP_WS(s);
    if (*s == ',') {
      s++;
      JC_SKIP_WS(s);
      after_comma = 1;
      goto key;
    }
    if (*s == '}') { s++; p->depth--; goto done; }
    jc_excerpt((const char *)p->start + f->key_off, f->key_len, key, 60);
    snprintf(p->head, sizeof p->head,
             "expected ',' or '}' after member \"%s\" at ", key);
  } else {
    f->count++;
    lua_rawseti(L, f->base, (int)f->count);
    JC_SKIP_WS(s);
    if (*s == ',') { s++; after_comma = 1; goto value; }
    if (*s == ']') { s++; p->depth--; goto done; }
    snprintf(p->head, sizeof p->head,
             "expected ',' or ']' after array element %lu at ",
             (unsigned long)f->count);
  }
  return jc_fail(p, s >= end ? "unexpected_end" : "unexpected_character", s,
                 "");

finish:
  JC_SKIP_WS(s);
  if (s < end) {
    snprintf(p->head, sizeof p->head,
             "trailing content after the JSON value at ");
    return jc_fail(p, "trailing_content", s,
                   ": the text must hold exactly one JSON value");
  }
  return 0;
}

/* ===================================================================== */
/* decode()                                                              */
/* ===================================================================== */

/* The option value on top as an integer in [lo, hi], or raise. */
static size_t jc_opt_int(lua_State *L, int arg, const char *name, double lo,
                         double hi, const char *range) {
  double v;
  if (lua_type(L, -1) != LUA_TNUMBER)
    luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", name,
                                          range));
  v = (double)lua_tonumber(L, -1);
  if (v != floor(v) || v < lo || v > hi)
    luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", name,
                                          range));
  return (size_t)v;
}

void jc_parse_opts(lua_State *L, int arg, size_t *max_depth,
                   size_t *max_bytes) {
  const char *k;
  *max_depth = JC_MAX_DEPTH;
  *max_bytes = JC_MAX_BYTES;
  if (lua_isnoneornil(L, arg)) return;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, arg, "option names must be strings");
    k = lua_tostring(L, -2);
    if (strcmp(k, "max_depth") == 0)
      *max_depth = jc_opt_int(L, arg, k, 1, JC_MAX_DEPTH_LIMIT,
                              "an integer from 1 to 3000");
    else if (strcmp(k, "max_bytes") == 0)
      *max_bytes = jc_opt_int(L, arg, k, 0, 281474976710656.0,
                              "an integer >= 0");
    else
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s'", k));
    lua_pop(L, 1);
  }
}

/* Line and column (1-based, column in UTF-8 characters) of 'at'. */
static void jc_locate(const unsigned char *s, const unsigned char *at,
                      unsigned long *line, unsigned long *col) {
  unsigned long ln = 1, c = 1;
  for (; s < at; s++) {
    if (*s == '\n') { ln++; c = 1; }
    else if ((*s & 0xC0) != 0x80) c++;
  }
  *line = ln;
  *col = c;
}

/* Push nil and the err table of 'p'. [-0, +2, m] */
static int jc_push_parse_error(jc_parser *p) {
  lua_State *L = p->L;
  unsigned long line, col;
  size_t offset = (size_t)(p->at - p->start);
  char pos[64];
  lua_settop(L, p->base + (p->duplicate ? JC_S_FRAMES : 2));
  jc_locate(p->start, p->at, &line, &col);
  snprintf(pos, sizeof pos, "line %lu, column %lu", line, col);
  lua_pushnil(L);
  jc_push_error(L, "format", p->kind, "%s%s%s", p->head, pos, p->tail);
  lua_pushinteger(L, (lua_Integer)offset);
  lua_setfield(L, -2, "offset");
  lua_pushinteger(L, (lua_Integer)line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, (lua_Integer)col);
  lua_setfield(L, -2, "column");
  if (p->duplicate) {
    lua_pushvalue(L, p->base + JC_S_FRAMES);
    lua_setfield(L, -2, "key");
    lua_pushvalue(L, p->base + JC_S_ARRMT);
    lua_setfield(L, -2, "pointer");
    lua_replace(L, p->base + 4);
    lua_replace(L, p->base + 3);
  }
  return 2;
}

/*
** core.decode(text [, opts]) -> value | nil, err
**
** The format gate: 'text' (string) must hold exactly one JSON value
** (RFC 8259 §2), with optional whitespace (space, tab, LF, CR) around it.
** opts (table, optional):
**   max_depth  integer 1..3000, default 1000: deepest nesting of arrays
**              and objects (levels; "[]" is 1)
**   max_bytes  integer >= 0, default 64 MiB: longest text (bytes), checked
**              before any parsing
** Returns the Lua value: object -> table with string keys, no metatable;
** array -> table 1..n with metatable core.array_mt (also when empty);
** null -> core.null; strings as Lua strings (may hold "\0"); numbers: on
** Lua 5.3+ an integer lexeme (no fraction, no exponent) that fits int64 is
** an exact Lua integer ("-0" is integer 0), everything else a float; on
** LuaJIT and Lua 5.1/5.2 every number is a double.
** Fails (nil, err) with err.category = "format" and err.kind one of:
**   empty, unexpected_character, unexpected_end, trailing_content,
**   control_character, invalid_utf8, invalid_escape, invalid_surrogate,
**   invalid_number, number_out_of_range, duplicate_key (adds err.key and
**   err.pointer, the JSON Pointer of the repeated member), too_deep,
**   too_big;
** every err has offset (0-based byte), line and column (1-based, column
** in UTF-8 characters). A leading byte order mark is rejected
** (unexpected_character).
** Raises: 'text' not a string, 'opts' not a table, unknown option, option
** out of range; memory errors.
** Stack: [-0, +1 or +2, m]
*/
static int jc_decode(lua_State *L) {
  size_t len, max_depth, max_bytes;
  const char *text;
  luaL_checktype(L, 1, LUA_TSTRING);
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  jc_parse_opts(L, 2, &max_depth, &max_bytes);
  lua_settop(L, 2);
  text = lua_tolstring(L, 1, &len);
  return jc_parse_text(L, text, len, max_depth, max_bytes);
}

int jc_parse_text(lua_State *L, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes) {
  jc_parser p;
  jc_frame local[JC_LOCAL_FRAMES];
  memset(&p, 0, sizeof p);
  p.L = L;
  p.base = lua_gettop(L) - 2;
  p.start = (const unsigned char *)text;
  p.end = p.start + len;
  if (len > max_bytes) {
    snprintf(p.head, sizeof p.head, "text longer than %lu bytes at ",
             (unsigned long)max_bytes);
    jc_fail(&p, "too_big", p.start + max_bytes, "");
    return jc_push_parse_error(&p);
  }
  luaL_checkstack(L, 16, "jsoncontract.decode");
  luaL_getmetatable(L, JC_ARRAY_MT);    /* JC_S_ARRMT */
  lua_pushnil(L);                       /* JC_S_FRAMES */
  lua_pushnil(L);                       /* JC_S_SCRATCH */
  p.frames = local;
  p.nframes = JC_LOCAL_FRAMES;
  p.max_depth = max_depth;
  p.decpoint = localeconv()->decimal_point[0];
  if (jc_parse_run(&p) == 0) {
    lua_replace(L, p.base + JC_S_ARRMT);
    lua_settop(L, p.base + JC_S_ARRMT);
    return 1;
  }
  return jc_push_parse_error(&p);
}

static const luaL_Reg jc_parse_funcs[] = {
  {"decode", jc_decode},
  {NULL, NULL}
};

void jc_parse_open(lua_State *L) {
  luaL_setfuncs(L, jc_parse_funcs, 0);
}
