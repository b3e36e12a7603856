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
#include "opts.h"
#include "tape.h"
#include "utf8.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define JC_LOCAL_FRAMES 32

typedef struct jc_frame {
  size_t at;              /* tape index of the container */
  size_t count;           /* elements / members stored so far */
  size_t key;             /* tape index of the current member name, 0 */
  jc_u64 names;           /* object: one bit per name read (JC_NAME_BIT) */
  int is_object;
} jc_frame;

typedef struct jc_parser {
  lua_State *L;
  jc_tape *t;
  const unsigned char *start;
  const unsigned char *end;     /* start + len; *end == '\0' (Lua string) */
  uintptr_t lim;                /* end - 16, 0 when shorter ('jc_scan_str') */
  jc_frame *frames;
  size_t nframes;               /* capacity of 'frames' */
  size_t depth;
  size_t max_depth;
  char decpoint;                /* the locale's decimal point, for strtod
                                   ('\0' until a number needs it) */
  /* the error, once one is found */
  const char *kind;
  const unsigned char *at;
  const char *tail;
  int duplicate;                /* the error is a duplicate key */
  int in_value;                 /* the error is inside a member's value or
                                   an array element: its pointer names it */
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
/* Skip JSON whitespace (RFC 8259 §2) from 's', never past 'end' (the
** text's terminating NUL, which is not whitespace). A pretty-printed
** reply is mostly indentation: with SSE2 a run longer than one byte is
** skipped sixteen bytes at a time (each byte compared with the four
** whitespace bytes), else and for the last bytes one at a time. */
static JC_HOT_INLINE const unsigned char *jc_skip_ws(const unsigned char *s,
                                                     const unsigned char *end) {
#if defined(__SSE2__) && defined(__GNUC__)
  if (*s > ' ' || !JC_WS(*s)) return s;   /* most bytes: one compare */
  s++;
  if (!JC_WS(*s)) return s;     /* one byte: ": ", ", " */
  while (end - s >= 16) {
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    const __m128i ws = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')),
                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
    unsigned other = (unsigned)_mm_movemask_epi8(ws) ^ 0xFFFFu;
    if (other != 0) return s + __builtin_ctz(other);
    s += 16;
  }
#else
  (void)end;
#endif
  while (JC_WS(*s)) s++;
  return s;
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

/* Push the JSON Pointer of the innermost container being read ('full':
** of the member whose name was just read, or of the array element being
** read: for duplicate keys and errors inside a value). [-0, +1, m] */
static void jc_push_pointer(jc_parser *p, int full) {
  lua_State *L = p->L;
  luaL_Buffer b;
  size_t i;
  char num[32];
  luaL_buffinit(L, &b);
  for (i = 0; i + 1 < p->depth || (full && i < p->depth); i++) {
    const jc_frame *f = &p->frames[i];
    luaL_addchar(&b, '/');
    if (f->is_object) {
      const jc_tv *k = &p->t->v[f->key];
      if (f->key != 0) jc_add_token(&b, k->s, k->u.len);
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

/* The plain ASCII run at 's' (bytes 0x20..0x7F other than '"' and '\\'),
** as jc_scan_plain8 finds it, in fewer instructions for the strings of a
** document: sixteen bytes at a time while 'lim' (the address sixteen bytes
** before the end, 0 for a shorter text) is not passed, with one signed
** compare for three of the four stops: x = byte ^ 0x02 is below 0x21 for
** a control (0x00-0x1F stays there), for '"' (0x22 -> 0x20) and for a
** byte with the high bit set (negative), and for no other byte (xor 0x02
** keeps 0x20, 0x21 and 0x24-0x7F at or above 0x21, and takes 0x23 to
** 0x21); a compare for '\\' makes the fourth. The last bytes go through
** jc_scan_plain8. */
#if defined(__SSE2__) && defined(__GNUC__)
typedef struct jc_scank {
  __m128i two, below, bslash;
} jc_scank;
/* The scan's constants, set once by the parse loop; the empty asm hides
** their values, so the compiler keeps them in registers instead of
** loading them again before every string. */
#define JC_SCANK_INIT(k) do {                                          \
    (k).two = _mm_set1_epi8(0x02);                                     \
    (k).below = _mm_set1_epi8(0x21);                                   \
    (k).bslash = _mm_set1_epi8('\\');                                 \
    __asm__("" : "+x"((k).two), "+x"((k).below), "+x"((k).bslash));   \
  } while (0)
#else
typedef int jc_scank;
#define JC_SCANK_INIT(k) ((k) = 0)
#endif

static JC_HOT_INLINE const unsigned char *jc_scan_k(const unsigned char *s,
                                                    const unsigned char *end,
                                                    uintptr_t lim,
                                                    const jc_scank *k) {
#if defined(__SSE2__) && defined(__GNUC__)
  while ((uintptr_t)s <= lim) {
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    const __m128i stop = _mm_or_si128(
        _mm_cmplt_epi8(_mm_xor_si128(v, k->two), k->below),
        _mm_cmpeq_epi8(v, k->bslash));
    unsigned bits = (unsigned)_mm_movemask_epi8(stop);
    if (bits != 0) return s + (unsigned)__builtin_ctz(bits);
    s += 16;
  }
#else
  (void)lim;
  (void)k;
#endif
  return jc_scan_plain8(s, end);
}

/* 'jc_scan_k' with its constants made here, for the slow paths. */
static JC_HOT_INLINE const unsigned char *jc_scan_str(const unsigned char *s,
                                                      const unsigned char *end,
                                                      uintptr_t lim) {
  jc_scank k;
  JC_SCANK_INIT(k);
  return jc_scan_k(s, end, lim, &k);
}

/* Skip the plain ASCII run at 's' (bytes 0x20..0x7F other than '"' and
** '\\'), reading at most up to 'end' (then byte by byte: the input is
** NUL-terminated, and NUL stops the run); returns the first other byte. */
static const unsigned char *jc_skip_plain(const unsigned char *s,
                                          const unsigned char *end,
                                          uintptr_t lim) {
  s = jc_scan_str(s, end, lim);
  while (jc_strclass[*s] == 0) s++;
  return s;
}

/* The slow path of 'jc_string': the string at 'run' has an escape at 's'.
** Decodes into the tape's arena; entry 'e' points there. [-0, +0, m] */
static int jc_string_escaped(jc_parser *p, const unsigned char **ps,
                             const unsigned char *run,
                             const unsigned char *s, size_t e) {
  const unsigned char *q = s, *end = p->end, *bad = NULL;
  unsigned char *o, *o0;
  long cp, lo;
  size_t n;
  /* The decoded string is never longer than its raw text; plain runs are
  ** skipped a block at a time (jc_scan_str) */
  for (;;) {
    q = jc_scan_str(q, end, p->lim);
    if (q >= end || *q == '"') break;
    q += (*q == '\\' && q + 1 < end) ? 2 : 1;
  }
  o0 = o = (unsigned char *)jc_tape_bytes(p->L, p->t, (size_t)(q - run) + 1);
  memcpy(o, run, (size_t)(s - run));
  o += s - run;
  for (;;) {
    unsigned char c = *s;
    switch (jc_strclass[c]) {
      case 0: {                 /* a plain run, copied whole */
        const unsigned char *r = jc_skip_plain(s + 1, end, p->lim);
        memcpy(o, s, (size_t)(r - s));
        o += r - s;
        s = r;
        continue;
      }
      case 1: {
        size_t off = (size_t)(run - 1 - p->start);
        p->t->v[e].s = (const char *)o0;
        p->t->v[e].u.len = (size_t)(o - o0);
        p->t->v[e].flags = JC_TF_ESC;
        p->t->v[e].n = off < 0xffffffffu ? (unsigned)off : 0xffffffffu;
        *ps = s + 1;
        return 0;
      }
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


/* Parse the string whose opening quote is at '*ps' into entry 'e' and
** move '*ps' past the closing quote; the bytes before 's' are known plain.
** [-0, +0, m] */
static int jc_string(jc_parser *p, const unsigned char **ps,
                     const unsigned char *s, size_t e) {
  const unsigned char *run = *ps + 1, *end = p->end;
  size_t n;
  for (;;) {
    s = jc_skip_plain(s, end, p->lim);
    switch (jc_strclass[*s]) {
      case 0: s++; continue;
      case 1:
        p->t->v[e].s = (const char *)run;
        p->t->v[e].u.len = (size_t)(s - run);
        *ps = s + 1;
        return 0;
      case 2: return jc_string_escaped(p, ps, run, s, e);
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

/* Parse the number at '*ps' (RFC 8259 §6) into entry 'e', advance '*ps'.
** An integer lexeme that fits int64 is exact (JC_TF_INT); beyond, or with
** a fraction or exponent, the entry keeps the lexeme and its double. */
static int jc_number(jc_parser *p, const unsigned char **ps, size_t e) {
  const unsigned char *b = *ps, *s = b, *digits, *intend, *fracend;
  int neg = 0, isint = 1, hasexp = 0;
  size_t len;
  /* the digits' value, read as they are scanned (unsigned: past 19 digits
  ** it wraps around); used for integers of at most 18 digits and for
  ** fractions of at most 15 digits in all, where it is exact */
  unsigned long long m = 0;
  char local[64], *buf, *end, *dp;
  double d;
  jc_tv *v;
  if (*s == '-') { neg = 1; s++; }
  digits = s;
  if (*s == '0') {
    s++;
    if (JC_DIGIT(*s))
      return jc_bad_number(p, s, ": leading zeros are not allowed");
  } else if (*s >= '1' && *s <= '9') {
    while (JC_DIGIT(*s)) m = m * 10 + (unsigned)(*s++ - '0');
  } else if (*s == 'I') {
    return jc_bad_number(p, b, ": NaN and Infinity are not JSON numbers");
  } else {
    return jc_bad_number(p, s, ": expected a digit after '-'");
  }
  intend = s;
  if (*s == '.') {
    s++;
    if (!JC_DIGIT(*s))
      return jc_bad_number(p, s, ": expected a digit after '.'");
    while (JC_DIGIT(*s)) m = m * 10 + (unsigned)(*s++ - '0');
    isint = 0;
  }
  fracend = s;
  if (*s == 'e' || *s == 'E') {
    hasexp = 1;
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
  v = &p->t->v[e];
  if (isint && s - digits <= 18) {      /* < 10^18: exact in int64 */
    v->flags = JC_TF_INT;
    v->u.i = neg ? -(long long)m : (long long)m;
    return 0;
  }
  if (isint) {                          /* 19 digits or more */
    unsigned long long x = 0, lim = neg ? 9223372036854775808ULL
                                        : 9223372036854775807ULL;
    int fits = 1;
    const unsigned char *q;
    for (q = digits; q < s; q++) {
      unsigned d1 = (unsigned)(*q - '0');
      if (x > (lim - d1) / 10) { fits = 0; break; }
      x = x * 10 + d1;
    }
    if (fits) {
      v->flags = JC_TF_INT;
      if (neg && x == 9223372036854775808ULL)
        v->u.i = -9223372036854775807LL - 1;
      else
        v->u.i = neg ? -(long long)x : (long long)x;
      return 0;
    }
  }
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  /* Clinger's fast path: a decimal fraction of at most 15 digits and no
  ** exponent is m / 10^k with m < 2^53 and k <= 15, both exact doubles,
  ** so the one IEEE division is the correctly rounded value strtod would
  ** give (prices and scores, most numbers a model writes) */
  if (!isint && !hasexp && (intend - digits) + (fracend - intend - 1) <= 15) {
    static const double pow10[16] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6,
      1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
    d = (double)m / pow10[fracend - intend - 1];
    v = &p->t->v[e];
    v->flags = JC_TF_LEX;
    v->s = (const char *)b;
    v->n = (unsigned)len;
    v->u.d = neg ? -d : d;
    return 0;
  }
#endif
  if (len < sizeof local) buf = local;
  else buf = jc_tape_bytes(p->L, p->t, len + 1);
  memcpy(buf, b, len);
  buf[len] = '\0';
  if (p->decpoint == '\0')      /* once per parse, and only when needed */
    p->decpoint = localeconv()->decimal_point[0];
  if (p->decpoint != '.' && (dp = strchr(buf, '.')) != NULL)
    *dp = p->decpoint;
  d = strtod(buf, &end);
  if (isinf(d) || end != buf + len) {
    snprintf(p->head, sizeof p->head, "number out of range at ");
    return jc_fail(p, "number_out_of_range", b,
                   ": the magnitude must be below 1.8e308");
  }
  if (len > 0xffffffffu) return jc_bad_number(p, b, ": too long");
  v = &p->t->v[e];
  v->flags = isint ? JC_TF_BIG : JC_TF_LEX;
  v->s = (const char *)b;
  v->n = (unsigned)len;
  v->u.d = d;
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

/* 'jc_open' past the frames it has: twice as many, in the tape's aux
** scratch. [-0, +0, m] */
static void jc_more_frames(jc_parser *p) {
  size_t cap = p->nframes * 2;
  jc_frame *nf;
  if (p->frames == p->t->aux) {
    nf = (jc_frame *)jc_tape_aux(p->L, p->t, cap * sizeof(jc_frame));
  } else {
    nf = (jc_frame *)jc_tape_aux(p->L, p->t, cap * sizeof(jc_frame));
    memcpy(nf, p->frames, p->nframes * sizeof(jc_frame));
  }
  p->frames = nf;
  p->nframes = cap;
}

/* Open a frame for the container at 'at' whose entry will be 'e' (the
** caller appends it); returns the frame, or NULL past max_depth (the
** error recorded). [-0, +0, m] */
static JC_HOT_INLINE jc_frame *jc_open(jc_parser *p, const unsigned char *at,
                                       int is_object, size_t e) {
  jc_frame *f;
  if (p->depth >= p->max_depth) {
    snprintf(p->head, sizeof p->head,
             "nesting deeper than %lu levels at ", (unsigned long)p->max_depth);
    jc_fail(p, "too_deep", at, "");
    return NULL;
  }
  if (p->depth == p->nframes) jc_more_frames(p);
  f = &p->frames[p->depth++];
  if (p->depth > p->t->depth) p->t->depth = p->depth;
  f->at = e;
  f->is_object = is_object;
  f->count = 0;
  f->key = 0;
  f->names = 0;
  return f;
}

/* Close the innermost container 'f' (its entry in 'tv', the tape's
** entries, 'n' of them written); returns the frame around it, NULL at the
** top. The caller has checked the count ('jc_too_many'). */
static JC_HOT_INLINE jc_frame *jc_close(jc_parser *p, jc_frame *f, jc_tv *tv,
                                        size_t n) {
  jc_tv *v = &tv[f->at];
  v->n = (unsigned)f->count;
  v->u.end = n;
  return --p->depth > 0 ? f - 1 : NULL;
}

/* A container closed at 'at' with more members or elements than an entry
** counts. Returns -1. */
static int jc_too_many(jc_parser *p, const unsigned char *at) {
  snprintf(p->head, sizeof p->head, "container too large at ");
  return jc_fail(p, "too_big", at, "");
}

static jc_u64 jc_key_hash(const jc_tv *k, size_t obj) {
  jc_u64 h = 0xcbf29ce484222325ULL ^ (jc_u64)obj;
  size_t i;
  for (i = 0; i < k->u.len; i++) {
    h ^= (unsigned char)k->s[i];
    h *= 0x100000001b3ULL;
  }
  return h ^ (h >> 29);
}

/* Insert key 'k' of object 'obj' in the duplicate set; returns the index
** of an equal key already there, else 0. [-0, +0, m] */
static size_t jc_dset_put(jc_parser *p, size_t obj, size_t k) {
  jc_tape *t = p->t;
  size_t mask, pos;
  if ((t->dn + 1) * 2 > t->dcap) {   /* grow and rehash */
    jc_dslot *old = t->dset;
    size_t ocap = t->dcap, i, ncap = ocap ? ocap * 2 : 256;
    jc_dslot *ns;
    if (ncap > ((size_t)-1) / 2 / sizeof(jc_dslot)) jc_tape_nomem(p->L, t);
    ns = (jc_dslot *)t->alloc(t->ud, NULL, 0, ncap * sizeof(jc_dslot));
    if (ns == NULL) jc_tape_nomem(p->L, t);
    memset(ns, 0, ncap * sizeof(jc_dslot));
    t->dset = ns;
    t->dcap = ncap;
    mask = ncap - 1;
    for (i = 0; i < ocap && t->dn > 0; i++) {
      if (old[i].key == 0) continue;
      pos = (size_t)jc_key_hash(&t->v[old[i].key], old[i].obj) & mask;
      while (ns[pos].key != 0) pos = (pos + 1) & mask;
      ns[pos] = old[i];
    }
    jc_tape_free(t, old, ocap * sizeof(jc_dslot));
  }
  mask = t->dcap - 1;
  pos = (size_t)jc_key_hash(&t->v[k], obj) & mask;
  while (t->dset[pos].key != 0) {
    const jc_tv *a = &t->v[t->dset[pos].key], *b = &t->v[k];
    if (t->dset[pos].obj == obj && a->u.len == b->u.len &&
        memcmp(a->s, b->s, a->u.len) == 0)
      return t->dset[pos].key;
    pos = (pos + 1) & mask;
  }
  t->dset[pos].obj = obj;
  t->dset[pos].key = k;
  t->dn++;
  return 0;
}

/* The raw text of the member name at entry 'e' (parsed: its closing
** quote is there), cut for a message into 'out' (80 bytes). */
static void jc_raw_key(jc_parser *p, size_t e, char *out) {
  size_t ko = jc_tv_off(p->t, e) + 1, kl = 0;
  while (p->start[ko + kl] != '"') kl += p->start[ko + kl] == '\\' ? 2 : 1;
  jc_excerpt((const char *)p->start + ko, kl, out, 60);
}

#define JC_DUP_LINEAR 16   /* members compared pairwise before the set */

/* One of 64 bits for a member name of 'len' bytes, 'first' and 'last' its
** first and last (0 when empty): equal names set the same bit. The three
** are mixed by shifts and one multiply (Fibonacci hashing: the top six
** bits of the 32-bit product). Names of one object that share a bit are
** compared one by one, so that had better be rare: on the member names
** of the corpora's objects (SchemaStore, JSON Schema Bench, support
** e-mails) a quarter as often as with a weighted sum taken modulo 64. */
#define JC_NAME_BIT(len, first, last) \
  ((jc_u64)1 << (((unsigned)(len) ^ (unsigned)(first) << 5 \
                  ^ (unsigned)(last) << 10) * 0x9E3779B1u >> 26 & 63u))

/* The name bit of the member name at entry 'k' (an empty name: that of
** its quotes, as the loop finds it). */
static jc_u64 jc_name_bit(const jc_tv *k) {
  size_t len = k->u.len;
  return len > 0 ? JC_NAME_BIT(len, (unsigned char)k->s[0],
                               (unsigned char)k->s[len - 1])
                 : JC_NAME_BIT(0, (unsigned)'"', (unsigned)'"');
}

/* Is the member name at entry 'k' a repeat in the innermost object? The
** parser's loop has already decided the common case of a small object
** (fewer than JC_DUP_LINEAR members) and a name whose bit ('names') no
** earlier name set: new. Here the rest: a small object's names compared
** one by one, a larger one's through the set. */
static int jc_is_dup(jc_parser *p, jc_frame *f, size_t k) {
  jc_tape *t = p->t;
  const jc_tv *b = &t->v[k];
  size_t j, m;
  if (f->count < JC_DUP_LINEAR) {
    /* most names differ in length or first byte: no memcmp call then */
    for (j = f->at + 1, m = 0; m < f->count; m++, j = jc_tv_next(t, j + 1)) {
      const jc_tv *a = &t->v[j];
      if (a->u.len == b->u.len
          && (b->u.len == 0 || (a->s[0] == b->s[0]
                                && memcmp(a->s, b->s, b->u.len) == 0)))
        return 1;
    }
    return 0;
  }
  if (f->count == JC_DUP_LINEAR) {   /* move the first ones into the set */
    if (t->dn == 0 && t->dcap > 0)
      memset(t->dset, 0, t->dcap * sizeof(jc_dslot));
    for (j = f->at + 1, m = 0; m < f->count; m++, j = jc_tv_next(t, j + 1))
      jc_dset_put(p, f->at, j);
  }
  return jc_dset_put(p, f->at, k) != 0;
}

/* Mark the error being returned as one inside the value being read (a
** member's value or an array element): its pointer names that value, not
** the container around it. Returns -1. */
static int jc_in_value(jc_parser *p) {
  p->in_value = 1;
  return -1;
}

/* Append the entry of a value whose first byte is at 'at_' (a string: the
** byte after its quote) to the tape: 'len_' its string length or 0. The
** loop keeps the entries ('tv'), their count ('n') and capacity ('cap')
** in locals, which only the growth of the array changes; t->n is stored
** when the text has been read (nothing the loop calls reads it; after a
** failed parse the tape is reset). Every field is written once (no
** zeroing first). Raises a memory error. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* kind, flags, the two bytes after them and 'n' (0) in one 8-byte store */
#define JC_PUT_HEAD(x_, kind_, flags_) do {                          \
    jc_u64 h_ = (jc_u64)(kind_) | (jc_u64)(flags_) << 8;             \
    memcpy((x_), &h_, 8);                                            \
  } while (0)
typedef char jc_tv_head_check[offsetof(jc_tv, flags) == 1
                              && offsetof(jc_tv, n) == 4
                              && offsetof(jc_tv, s) == 8 ? 1 : -1];
#else
#define JC_PUT_HEAD(x_, kind_, flags_) do {                          \
    (x_)->kind = (unsigned char)(kind_);                             \
    (x_)->flags = (unsigned char)(flags_);                           \
    (x_)->n = 0;                                                     \
  } while (0)
#endif
#define JC_PUT(kind_, flags_, at_, len_) do {                        \
    jc_tv *x_;                                                       \
    if (n == cap) {                                                  \
      p->t->n = n;                                                   \
      jc_tape_grow_entries(p->L, p->t);                              \
      tv = p->t->v;                                                  \
      cap = p->t->cap;                                               \
    }                                                                \
    x_ = &tv[n++];                                                   \
    JC_PUT_HEAD(x_, kind_, flags_);                                  \
    x_->s = (const char *)(at_);                                     \
    x_->u.len = (len_);                                              \
  } while (0)

/* Is the byte before 's', whitespace skipped, a comma? The loop reads a
** value or a member name after '[', '{', ':' or ',': this tells a
** trailing comma for its message. */
static int jc_after_comma(const jc_parser *p, const unsigned char *s) {
  while (s > p->start && JC_WS(s[-1])) s--;
  return s > p->start && s[-1] == ',';
}

/* Parse the whole text into the tape. */
static int jc_parse_run(jc_parser *p) {
  const unsigned char *s = p->start, *end = p->end, *q;
  const unsigned char *at;      /* 's' for the calls that move it ('s'
                                   itself stays in a register) */
  const uintptr_t lim = p->lim;
  jc_tv *tv = p->t->v;
  size_t n = p->t->n, cap = p->t->cap;
  jc_frame *f = NULL;           /* the innermost open container, NULL at
                                   the top (p->frames[p->depth - 1]) */
  size_t e;
  jc_u64 bit;
  jc_scank sk;
  char key[80];

  JC_SCANK_INIT(sk);
  s = jc_skip_ws(s, end);
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
  /* each skip of whitespace is tried only when the byte the text has
  ** most often there is not next (compact JSON has no whitespace) */
  if (*s != '"') s = jc_skip_ws(s, end);
  if (*s == '"') {      /* most values: a string, before the switch's jump */
    /* plain ASCII up to its closing quote (most strings a model writes):
    ** decided here; any other byte stops the scan and jc_string goes on
    ** from it. The text is NUL-terminated: reading '*q' at the end is
    ** safe. */
    q = jc_scan_k(s + 1, end, lim, &sk);
    if (*q == '"') {
      JC_PUT(JT_STRING, 0, s + 1, (size_t)(q - s - 1));
      s = q + 1;
      goto done;
    }
    JC_PUT(JT_STRING, 0, NULL, 0);
    at = s;
    if (jc_string(p, &at, q, n - 1)) return jc_in_value(p);
    s = at;
    goto done;
  }
  switch (*s) {
    case '{':
      if ((f = jc_open(p, s, 1, n)) == NULL) return -1;
      JC_PUT(JT_OBJECT, 0, s, 0);
      s++;
      s = jc_skip_ws(s, end);
      if (*s == '}') { s++; f = jc_close(p, f, tv, n); goto done; }
      goto key;
    case '[':
      if ((f = jc_open(p, s, 0, n)) == NULL) return -1;
      JC_PUT(JT_ARRAY, 0, s, 0);
      s++;
      s = jc_skip_ws(s, end);
      if (*s == ']') { s++; f = jc_close(p, f, tv, n); goto done; }
      goto value;
    case '1': case '2': case '3': case '4': case '5': case '6': case '7':
    case '8': case '9': {
      /* the common number, an integer of 1 to 18 digits (exact in an
      ** int64) followed by a delimiter: read here; any other goes the
      ** whole way through jc_number, from its first byte */
      jc_u64 m = (unsigned)(*s - '0');
      for (q = s + 1; JC_DIGIT(*q) && q - s < 18; q++)
        m = m * 10 + (unsigned)(*q - '0');
      if (*q == ',' || *q == '}' || *q == ']' || JC_WS(*q) || q >= end) {
        JC_PUT(JT_NUMBER, JC_TF_INT, s, 0);
        tv[n - 1].u.i = (long long)m;
        s = q;
        goto done;
      }
    }
      /* fall through */
    case '-': case '0':
      JC_PUT(JT_NUMBER, 0, s, 0);
      at = s;
      if (jc_number(p, &at, n - 1)) return jc_in_value(p);
      s = at;
      goto done;
    case 't':
      /* each literal by one compare (the text's bytes are there) */
      if (end - s < 4 || memcmp(s, "true", 4) != 0)
        { jc_in_value(p); return jc_bad_literal(p, s, "true"); }
      JC_PUT(JT_BOOLEAN, JC_TF_TRUE, s, 0);
      s += 4;
      goto done;
    case 'f':
      if (end - s < 5 || memcmp(s, "false", 5) != 0)
        { jc_in_value(p); return jc_bad_literal(p, s, "false"); }
      JC_PUT(JT_BOOLEAN, 0, s, 0);
      s += 5;
      goto done;
    case 'n':
      if (end - s < 4 || memcmp(s, "null", 4) != 0)
        { jc_in_value(p); return jc_bad_literal(p, s, "null"); }
      JC_PUT(JT_NULL, 0, s, 0);
      s += 4;
      goto done;
    case '+':
      jc_in_value(p);
      return jc_bad_number(p, s, ": a number must not start with '+'");
    case '.':
      jc_in_value(p);
      return jc_bad_number(p, s, ": a number must start with a digit");
    case 'N': case 'I':
      jc_in_value(p);
      if ((s[0] == 'N' && s[1] == 'a' && s[2] == 'N')
          || (s[0] == 'I' && s[1] == 'n' && s[2] == 'f'))
        return jc_bad_number(p, s, ": NaN and Infinity are not JSON numbers");
      return jc_fail_unexpected(p, s, ": expected a JSON value");
    case ']': case '}':
      if (p->depth > 0 && jc_after_comma(p, s)) {
        snprintf(p->head, sizeof p->head, "trailing comma before '%c' at ",
                 *s);
        return jc_fail(p, "unexpected_character", s, "");
      }
      return jc_fail_unexpected(p, s, ": expected a JSON value");
    default:
      jc_in_value(p);
      return jc_fail_unexpected(p, s, ": expected a JSON value");
  }

key:   /* f->key still names the member before (0: none); a pointer reads it
          only for an error in or after a member's value, by then its own */
  if (*s != '"') {
    if (*s == '}' && jc_after_comma(p, s)) {
      snprintf(p->head, sizeof p->head, "trailing comma before '}' at ");
      return jc_fail(p, "unexpected_character", s, "");
    }
    return jc_fail_unexpected(p, s, ": expected a member name in double quotes");
  }
  q = jc_scan_k(s + 1, end, lim, &sk);
  if (*q == '"') {      /* plain, as a string value above */
    size_t len = (size_t)(q - s - 1);
    /* an empty name's "first" and "last" bytes are its quotes, as in
    ** jc_name_bit (read in the text, no test for the length) */
    bit = JC_NAME_BIT(len, s[1], q[-1]);
    JC_PUT(JT_STRING, 0, s + 1, len);
    s = q + 1;
  } else {
    JC_PUT(JT_STRING, 0, NULL, 0);
    at = s;
    if (jc_string(p, &at, q, n - 1)) return -1;
    s = at;
    bit = jc_name_bit(&tv[n - 1]);
  }
  e = n - 1;
  f->key = e;
  /* a small object's name whose bit no earlier name set is new: most
  ** names are decided so, without a comparison */
  if (f->count < JC_DUP_LINEAR && (f->names & bit) == 0)
    f->names |= bit;
  else if (jc_is_dup(p, f, e)) {
    jc_raw_key(p, e, key);
    p->duplicate = 1;
    snprintf(p->head, sizeof p->head, "duplicate key \"%s\" at ", key);
    return jc_fail(p, "duplicate_key", p->start + jc_tv_off(p->t, e), ")");
  }
  if (*s != ':') s = jc_skip_ws(s, end);
  if (*s != ':') {
    char what[48];
    jc_raw_key(p, e, key);
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
  goto value;

done:
  if (f == NULL) goto finish;
  f->count++;
  if (f->is_object) {
    if (*s != ',') s = jc_skip_ws(s, end);
    if (*s == ',') {
      s++;
      if (*s != '"') s = jc_skip_ws(s, end);
      goto key;
    }
    if (*s == '}') {
      s++;
      if (f->count > 0xffffffffu) return jc_too_many(p, s);
      f = jc_close(p, f, tv, n);
      goto done;
    }
    jc_raw_key(p, f->key, key);
    snprintf(p->head, sizeof p->head,
             "expected ',' or '}' after member \"%s\" at ", key);
  } else {
    if (*s != ',') s = jc_skip_ws(s, end);
    if (*s == ',') { s++; goto value; }
    if (*s == ']') {
      s++;
      if (f->count > 0xffffffffu) return jc_too_many(p, s);
      f = jc_close(p, f, tv, n);
      goto done;
    }
    snprintf(p->head, sizeof p->head,
             "expected ',' or ']' after array element %lu at ",
             (unsigned long)f->count);
  }
  return jc_fail(p, s >= end ? "unexpected_end" : "unexpected_character", s,
                 "");

finish:
  p->t->n = n;
  s = jc_skip_ws(s, end);
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

static const jc_opt jc_decode_opts[] = {
  JC_PARSE_OPTS,
  { "keep_order", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

void jc_parse_opts(lua_State *L, int arg, size_t *max_depth,
                   size_t *max_bytes) {
  jc_optval v[3];
  jc_opts_read(L, arg, jc_decode_opts, v);
  luaL_argcheck(L, !v[2].set, arg, "option 'keep_order' is for decode");
  *max_depth = v[0].set ? (size_t)v[0].n : JC_MAX_DEPTH;
  *max_bytes = v[1].set ? (size_t)v[1].n : JC_MAX_BYTES;
}

/* Push nil and the err table of 'p'. [-0, +2, m] */
static int jc_push_parse_error(jc_parser *p) {
  lua_State *L = p->L;
  unsigned long line, col;
  size_t offset = (size_t)(p->at - p->start);
  char pos[64];
  jc_locate((const char *)p->start, offset, &line, &col);
  snprintf(pos, sizeof pos, "line %lu, column %lu", line, col);
  lua_pushnil(L);
  if (p->duplicate) {
    const jc_tv *k = &p->t->v[p->frames[p->depth - 1].key];
    char ptr[220];
    size_t plen;
    const char *pstr;
    jc_push_pointer(p, 1);
    pstr = lua_tolstring(L, -1, &plen);
    jc_excerpt(pstr, plen, ptr, 200);
    jc_error_begin(L, "format", p->kind, "%s%s (%s%s", p->head, ptr, pos,
                   p->tail);
    lua_insert(L, -2);
    lua_setfield(L, -2, "pointer");
    lua_pushlstring(L, k->s, k->u.len);
    lua_setfield(L, -2, "key");
  } else {
    jc_error_begin(L, "format", p->kind, "%s%s%s", p->head, pos, p->tail);
    jc_push_pointer(p, p->in_value);
    lua_setfield(L, -2, "pointer");
  }
  lua_pushinteger(L, (lua_Integer)offset);
  lua_setfield(L, -2, "offset");
  lua_pushinteger(L, (lua_Integer)line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, (lua_Integer)col);
  lua_setfield(L, -2, "column");
  jc_error_end(L);
  return 2;
}

/* 'jc_parse_tape', the err pushed only when 'want_err' (else 1 returned
** on a format error, nothing pushed). */
static int jc_parse_into(lua_State *L, jc_tape *t, const char *text,
                         size_t len, size_t max_depth, size_t max_bytes,
                         int want_err) {
  jc_parser p;
  jc_frame local[JC_LOCAL_FRAMES];
  memset(&p, 0, offsetof(jc_parser, head));   /* 'head' is written on error */
  p.head[0] = '\0';
  p.L = L;
  p.t = t;
  p.start = (const unsigned char *)text;
  p.end = p.start + len;
  p.lim = len >= 16 ? (uintptr_t)(p.end - 16) : 0;
  t->text = text;
  t->len = len;
  p.frames = local;
  p.nframes = JC_LOCAL_FRAMES;
  if (len > max_bytes) {
    if (!want_err) return 1;
    snprintf(p.head, sizeof p.head, "text longer than %lu bytes at ",
             (unsigned long)max_bytes);
    jc_fail(&p, "too_big", p.start + max_bytes, "");
    return jc_push_parse_error(&p);
  }
  /* one entry per ~16 bytes of text is typical: fewer regrowths of a large
  ** tape (each copies it) */
  if (t->cap < len / 16)
    jc_tape_grow(L, t, (void **)&t->v, &t->cap, len / 16, sizeof(jc_tv));
  p.max_depth = max_depth;
  if (jc_parse_run(&p) == 0) return 0;
  return want_err ? jc_push_parse_error(&p) : 1;
}

int jc_parse_tape(lua_State *L, jc_tape *t, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes) {
  return jc_parse_into(L, t, text, len, max_depth, max_bytes, 1);
}

int jc_parse_tape_quiet(lua_State *L, jc_tape *t, const char *text,
                        size_t len, size_t max_depth, size_t max_bytes) {
  return jc_parse_into(L, t, text, len, max_depth, max_bytes, 0);
}

int jc_parse_text(lua_State *L, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes) {
  int top = lua_gettop(L), r;
  jc_tape *t = jc_tape_acquire(L, JC_DECODE_TAPE);
  r = jc_parse_tape(L, t, text, len, max_depth, max_bytes);
  if (r == 0) {
    jc_tape_push_lua(L, t, 0, 0, 0, 0);
    r = 1;
  }
  jc_tape_release(t);
  lua_remove(L, top + 1);
  return r;
}

/*
** core.decode(text [, opts]) -> value | nil, err
**
** The format gate: 'text' (string) must hold exactly one JSON value
** (RFC 8259 §2), with optional whitespace (space, tab, LF, CR) around it.
** The text is parsed into a tape (tape.h), and the Lua value built from
** the tape.
** opts (table, optional):
**   max_depth  integer 1..3000, default 1000: deepest nesting of arrays
**              and objects (levels; "[]" is 1)
**   max_bytes  integer >= 0, default 64 MiB: longest text (bytes), checked
**              before any parsing
**   keep_order boolean, default false: every object gets a metatable
**              { __order = { its member names in document order } }
**              (an array with core.array_mt)
** Returns the Lua value: object -> table with string keys, no metatable
** (unless keep_order); array -> table 1..n with metatable core.array_mt
** (also when empty); null -> core.null; strings as Lua strings (may hold
** "\0"); numbers: on Lua 5.3+ an integer lexeme (no fraction, no
** exponent) that fits int64 is an exact Lua integer ("-0" is integer 0),
** everything else a float; on LuaJIT and Lua 5.1/5.2 every number is a
** double (the nearest one).
** Fails (nil, err) with err.category = "format" and err.kind one of:
**   empty, unexpected_character, unexpected_end, trailing_content,
**   control_character, invalid_utf8, invalid_escape, invalid_surrogate,
**   invalid_number, number_out_of_range, duplicate_key (err.key, and
**   err.pointer is the JSON Pointer of the repeated member), too_deep,
**   too_big;
** every err has offset (0-based byte), line and column (1-based, column
** in UTF-8 characters) and pointer: for an error inside a scalar value or
** at the start of one (a bad byte or escape in a string, a bad number or
** literal, a character that starts no value) the JSON Pointer of that
** member or element ("/note", "/items/3"), else of the innermost container
** being read ("" at the top). A leading byte order mark is
** rejected (unexpected_character).
** Raises: 'text' not a string, 'opts' not a table, unknown option, option
** out of range; memory errors.
** Stack: [-0, +1 or +2, m]
*/
static int jc_decode(lua_State *L) {
  size_t len;
  const char *text;
  jc_optval v[3];
  jc_tape *t;
  int r;
  luaL_checktype(L, 1, LUA_TSTRING);
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  jc_opts_read(L, 2, jc_decode_opts, v);
  lua_settop(L, 1);
  text = lua_tolstring(L, 1, &len);
  t = jc_tape_acquire_at(L, lua_upvalueindex(1));    /* 2: the tape */
  r = jc_parse_tape(L, t, text, len,
                    v[0].set ? (size_t)v[0].n : JC_MAX_DEPTH,
                    v[1].set ? (size_t)v[1].n : JC_MAX_BYTES);
  if (r == 0) {
    jc_tape_push_lua(L, t, 0, v[2].set && v[2].b, 0, 0);
    r = 1;
  }
  jc_tape_release(t);
  return r;
}

/*
** core.parse(text [, opts]) -> tape | nil, err
** The format gate alone, keeping the tape: 'text' is parsed as core.decode
** parses it (same opts but keep_order, same errs) into a new
** "jsoncontract.Tape" userdata that holds its own copy of the text. A
** tape can be validated by any number of validators
** (validator:validate(tape)) without building Lua values; its memory is
** freed by __gc. Raises as core.decode.
** Stack: [-0, +1 or +2, m]
*/
static int jc_parse(lua_State *L) {
  size_t len;
  const char *text;
  char *copy;
  jc_optval v[3];
  jc_tape *t;
  int r;
  luaL_checktype(L, 1, LUA_TSTRING);
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  jc_opts_read(L, 2, jc_decode_opts, v);
  luaL_argcheck(L, !v[2].set, 2, "option 'keep_order' is for decode");
  lua_settop(L, 1);
  text = lua_tolstring(L, 1, &len);
  t = jc_tape_new(L);                                  /* 2 */
  copy = jc_tape_bytes(L, t, len + 1);
  memcpy(copy, text, len + 1);
  r = jc_parse_tape(L, t, copy, len,
                    v[0].set ? (size_t)v[0].n : JC_MAX_DEPTH,
                    v[1].set ? (size_t)v[1].n : JC_MAX_BYTES);
  return r == 0 ? 1 : 2;
}

static const luaL_Reg jc_parse_funcs[] = {
  {"decode", jc_decode},
  {"parse", jc_parse},
  {NULL, NULL}
};

void jc_parse_open(lua_State *L) {
  lua_pushnil(L);      /* upvalue: the tape decode reuses, made on first use */
  luaL_setfuncs(L, jc_parse_funcs, 1);
}
