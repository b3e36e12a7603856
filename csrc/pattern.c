/*
** pattern.c: PCRE2 regular expressions for the schema gate. See pattern.h.
*/
#include "pattern.h"
#include "utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string.h>

#define JC_PATTERN_MT "jsoncontract.Pattern"
#define JC_MATCHER_MT "jsoncontract.Matcher"

#ifndef JC_SIMPLE_ATOMS
#define JC_SIMPLE_ATOMS 16   /* atoms of a pattern matched without PCRE2 */
#endif
#ifndef JC_SIMPLE_FIXED
#define JC_SIMPLE_FIXED 32   /* longest subject of a fixed-length pattern
                                matched byte by byte */
#endif
#define JC_NOMAX ((size_t)-1)

typedef struct jc_patom {      /* atom k of a simple pattern; its set of
                                  characters is bit k of jc_pattern.sets */
  size_t min, max;             /* repetitions; max JC_NOMAX: no bound */
  int wide;                    /* a negated class: every non-ASCII
                                  character is in it (its bytes from 0x80
                                  are in 'sets'), but ... */
  int nospace;                 /* ... with \s in it: ECMA-262's non-ASCII
                                  white space ('jc_ecma_space') */
} jc_patom;

struct jc_pattern {
  pcre2_code *code;   /* owned; NULL once freed or when compile failed */
  int jit;            /* JIT-compiled: matched with pcre2_jit_match */
  int simple;         /* 'atoms' decide every subject ('jc_simple_parse') */
  int search;         /* simple, unanchored: one atom, found anywhere */
  int natoms;
  size_t flen;        /* subject length when every atom has one count and
                         they add up to JC_SIMPLE_FIXED at most, else
                         JC_NOMAX */
  unsigned short fbit[JC_SIMPLE_FIXED];   /* then the atom bit by byte */
  jc_patom atoms[JC_SIMPLE_ATOMS];
  unsigned short sets[256];   /* bit k: the byte is in atom k's set (from
                                 0x80 only for a 'wide' atom: such a
                                 subject byte is part of a multi-byte
                                 character) */
};

struct jc_matcher {
  pcre2_match_data *md;      /* owned */
  pcre2_match_context *mc;   /* owned */
  pcre2_jit_stack *js;       /* owned; NULL until a JIT search outgrows
                                PCRE2's default 32 KiB stack, then assigned
                                to 'mc' for every later search */
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

/* __gc of "jsoncontract.Matcher": frees match data, context and JIT stack
** once (the context only points at the stack: either order is safe).
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
  if (m->js != NULL) {
    pcre2_jit_stack_free(m->js);
    m->js = NULL;
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

/* ECMA-262 long General_Category names PCRE2 10.42 does not know. */
static const char *const jc_gc_names[][2] = {
  { "Letter", "L" }, { "Cased_Letter", "L&" }, { "Uppercase_Letter", "Lu" },
  { "Lowercase_Letter", "Ll" }, { "Titlecase_Letter", "Lt" },
  { "Modifier_Letter", "Lm" }, { "Other_Letter", "Lo" }, { "Mark", "M" },
  { "Nonspacing_Mark", "Mn" }, { "Spacing_Mark", "Mc" },
  { "Enclosing_Mark", "Me" }, { "Number", "N" }, { "Decimal_Number", "Nd" },
  { "digit", "Nd" }, { "Letter_Number", "Nl" }, { "Other_Number", "No" },
  { "Punctuation", "P" }, { "punct", "P" }, { "Connector_Punctuation", "Pc" },
  { "Dash_Punctuation", "Pd" }, { "Open_Punctuation", "Ps" },
  { "Close_Punctuation", "Pe" }, { "Initial_Punctuation", "Pi" },
  { "Final_Punctuation", "Pf" }, { "Other_Punctuation", "Po" },
  { "Symbol", "S" }, { "Math_Symbol", "Sm" }, { "Currency_Symbol", "Sc" },
  { "Modifier_Symbol", "Sk" }, { "Other_Symbol", "So" },
  { "Separator", "Z" }, { "Space_Separator", "Zs" },
  { "Line_Separator", "Zl" }, { "Paragraph_Separator", "Zp" },
  { "Other", "C" }, { "Control", "Cc" }, { "cntrl", "Cc" }, { "Format", "Cf" },
  { "Surrogate", "Cs" }, { "Private_Use", "Co" }, { "Unassigned", "Cn" },
  { NULL, NULL }
};

/* ECMA-262 WhiteSpace and LineTerminator, as class members. */
#define JC_ECMA_SPACE "\\t\\n\\x0b\\f\\r \\u00a0\\u1680\\u2000-\\u200a" \
  "\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"

/* Push 'src' rewritten from ECMA-262 to PCRE2 syntax: \p{Letter} and
** \p{General_Category=L} / \p{Script=Greek} to PCRE2's names, \s and \S
** to ECMA-262's Unicode white space (PCRE2's are ASCII without UCP, and
** UCP would also widen \d and \w). [-0, +1, m] */
static const char *jc_pattern_translate(lua_State *L, const char *src,
                                        size_t len, size_t *erroff) {
  luaL_Buffer b;
  size_t i = 0;
  int in_class = 0;
  const char *err = NULL;
  luaL_buffinit(L, &b);
  while (i < len) {
    char ch = src[i];
    if (ch == '(' && !in_class && i + 1 < len && src[i + 1] == '?' &&
        err == NULL) {
      char g = i + 2 < len ? src[i + 2] : '\0';
      char h = i + 3 < len ? src[i + 3] : '\0';
      if (!(g == ':' || g == '=' || g == '!' ||
            (g == '<' && (h == '=' || h == '!' || h == '_' || h == '$' ||
                          (h >= 'a' && h <= 'z') || (h >= 'A' && h <= 'Z'))))) {
        err = "not ECMA-262 syntax (inline flags, comments and (?P...) "
              "groups are not allowed)";
        *erroff = i;
      }
    }
    if (ch == '(' && !in_class && i + 1 < len && src[i + 1] == '*' &&
        err == NULL) {
      err = "not ECMA-262 syntax (PCRE2 directives such as (*UTF), (*CR) "
            "or (*LIMIT_MATCH=n) are not allowed)";
      *erroff = i;
    }
    if (ch == '\\' && i + 1 < len) {
      char nx = src[i + 1];
      const char *close;
      if (err == NULL && strchr("aeghijlmoqyzACEFGHIJKLMNOQRTUVXYZ", nx) != NULL) {
        err = "not ECMA-262 syntax (unknown escape)";
        *erroff = i;
      }
      if ((nx == 'p' || nx == 'P') && i + 2 < len && src[i + 2] == '{' &&
          (close = (const char *)memchr(src + i + 3, '}', len - i - 3)) != NULL) {
        const char *name = src + i + 3, *eq;
        size_t nl = (size_t)(close - name), k;
        eq = (const char *)memchr(name, '=', nl);
        if (eq != NULL) { nl -= (size_t)(eq + 1 - name); name = eq + 1; }
        luaL_addchar(&b, '\\');
        luaL_addchar(&b, nx);
        luaL_addchar(&b, '{');
        for (k = 0; jc_gc_names[k][0] != NULL; k++)
          if (strlen(jc_gc_names[k][0]) == nl &&
              memcmp(jc_gc_names[k][0], name, nl) == 0)
            break;
        if (jc_gc_names[k][0] != NULL) luaL_addstring(&b, jc_gc_names[k][1]);
        else luaL_addlstring(&b, name, nl);
        luaL_addchar(&b, '}');
        i = (size_t)(close - src) + 1;
        continue;
      }
      if (nx == 's') {
        luaL_addstring(&b, in_class ? JC_ECMA_SPACE : "[" JC_ECMA_SPACE "]");
        i += 2;
        continue;
      }
      if (nx == 'S' && !in_class) {
        luaL_addstring(&b, "[^" JC_ECMA_SPACE "]");
        i += 2;
        continue;
      }
      luaL_addchar(&b, ch);
      luaL_addchar(&b, nx);
      i += 2;
      continue;
    }
    if (ch == '[' && !in_class && i + 1 < len && src[i + 1] == ']') {
      luaL_addstring(&b, "(?!)");          /* ECMA-262 []: matches nothing */
      i += 2;
      continue;
    }
    if (ch == '[' && !in_class && i + 2 < len && src[i + 1] == '^' &&
        src[i + 2] == ']') {
      luaL_addstring(&b, "(?s:.)");        /* ECMA-262 [^]: any character */
      i += 3;
      continue;
    }
    if (ch == '[' && !in_class) {
      in_class = 1;
      luaL_addchar(&b, ch);
      i++;
      if (i < len && src[i] == '^') { luaL_addchar(&b, '^'); i++; }
      continue;
    }
    if (ch == ']' && in_class) in_class = 0;
    luaL_addchar(&b, ch);
    i++;
  }
  luaL_pushresult(&b);
  return err;
}

/*
** Most schema patterns are a fixed shape: "^[A-Z]{3}-[0-9]{4}$" or
** "^[^@\s]+@[^@\s]+$". Such a pattern is matched here without PCRE2,
** whose call costs more than the match: '^', then atoms (an ASCII
** literal, an escaped ASCII punctuation character, \d, \w, a class of
** those and ASCII ranges, or such a class negated, which may hold \s too),
** with ?, *, +, {n}, {n,} or {n,m}, then '$'. Anything else (groups,
** alternation, '.', non-ASCII in the pattern, lazy quantifiers) is left to
** PCRE2. ASCII sets never match a byte of a multi-byte UTF-8 character,
** so bytes are characters there; a negated class holds every non-ASCII
** character but ECMA-262's white space when it names \s, and is matched
** a character at a time. Only when every atom with a choice of length
** shares no character with what may follow it: then taking as many as
** it allows is the only way to match, and one greedy scan decides.
** The source read is the schema's own (ECMA-262), before the rewrite for
** PCRE2 ('jc_pattern_translate'), which spells \s out as a class.
*/

/* ECMA-262 WhiteSpace and LineTerminator beyond ASCII (JC_ECMA_SPACE's
** non-ASCII members): is the character of 'n' bytes at 's' one? */
static int jc_ecma_space(const unsigned char *s, size_t n) {
  if (n == 2) return s[0] == 0xC2 && s[1] == 0xA0;               /* U+00A0 */
  if (n != 3) return 0;
  switch (s[0]) {
    case 0xE1: return s[1] == 0x9A && s[2] == 0x80;              /* U+1680 */
    case 0xE2:
      if (s[1] == 0x80)      /* U+2000-200A, U+2028, U+2029, U+202F */
        return s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF;
      return s[1] == 0x81 && s[2] == 0x9F;                       /* U+205F */
    case 0xE3: return s[1] == 0x80 && s[2] == 0x80;              /* U+3000 */
    case 0xEF: return s[1] == 0xBB && s[2] == 0xBF;              /* U+FEFF */
    default: return 0;
  }
}

/* The set of one atom being parsed: bit 'bit' of 'sets'. */
typedef struct jc_pset {
  unsigned short *sets;
  unsigned short bit;
} jc_pset;

/* Add byte 'b' (ASCII) to the set. */
static void jc_set_add(jc_pset *set, unsigned b) {
  set->sets[b] |= set->bit;
}

/* Add \d or \w (ASCII, as PCRE2 without UCP reads them) or an escaped
** punctuation character to the set; returns 0 for any other escape. */
static int jc_set_escape(jc_pset *set, unsigned char e) {
  unsigned b;
  if (e == 'd' || e == 'w') {
    for (b = '0'; b <= '9'; b++) jc_set_add(set, b);
    if (e == 'w') {
      for (b = 'A'; b <= 'Z'; b++) jc_set_add(set, b);
      for (b = 'a'; b <= 'z'; b++) jc_set_add(set, b);
      jc_set_add(set, '_');
    }
    return 1;
  }
  if (e >= 0x21 && e < 0x7f && !(e >= '0' && e <= '9') &&
      !(e >= 'A' && e <= 'Z') && !(e >= 'a' && e <= 'z')) {
    jc_set_add(set, e);   /* \. \- \/ ...: the character itself */
    return 1;
  }
  return 0;
}

/* Parse a class at s[i] == '[' (before 'end') into the set of atom 'a';
** returns the index past ']', or 0 when it is not one this matcher takes.
** A negated class makes 'a' wide (its set: the ASCII bytes not named,
** and every byte from 0x80). */
static size_t jc_set_class(const unsigned char *s, size_t i, size_t end,
                           jc_pset *set, jc_patom *a) {
  size_t start;
  unsigned c;
  int neg = 0;
  if (i + 1 < end && s[i + 1] == '^') { neg = 1; i++; }
  start = ++i;
  if (i < end && (s[i] == '^' || s[i] == ']')) return 0;
  while (i < end && s[i] != ']') {
    unsigned char ch = s[i];
    if (ch == '\\' && neg && i + 1 < end && s[i + 1] == 's') {
      /* ECMA-262 \s: its ASCII members here, the others by the scan */
      static const char ascii_space[] = "\t\n\v\f\r ";
      const char *w;
      for (w = ascii_space; *w; w++) jc_set_add(set, (unsigned char)*w);
      a->nospace = 1;
      if (i + 2 < end && s[i + 2] == '-' && i + 3 < end && s[i + 3] != ']')
        return 0;                   /* a range from an escape */
      i += 2;
    } else if (ch == '\\') {
      if (i + 1 >= end || !jc_set_escape(set, s[i + 1])) return 0;
      if (i + 2 < end && s[i + 2] == '-' && i + 3 < end && s[i + 3] != ']')
        return 0;                   /* a range from an escape */
      i += 2;
    } else if (ch < 0x20 || ch >= 0x7f || ch == '[') {
      return 0;
    } else if (ch == '-' && i > start && i + 1 < end && s[i + 1] != ']') {
      return 0;                     /* a range to nothing literal */
    } else if (i + 2 < end && s[i + 1] == '-' && s[i + 2] != ']') {
      unsigned b, hi = s[i + 2];
      if (hi == '\\' || hi < 0x20 || hi >= 0x7f || hi == '[' || hi < ch)
        return 0;
      for (b = ch; b <= hi; b++) jc_set_add(set, b);
      i += 3;
    } else {
      jc_set_add(set, ch);
      i++;
    }
  }
  if (i >= end || i == start) return 0;
  if (neg) {
    for (c = 0; c < 0x80; c++) set->sets[c] ^= set->bit;
    for (c = 0x80; c < 0x100; c++) set->sets[c] |= set->bit;
    a->wide = 1;
  }
  return i + 1;
}

/* Read a repetition count at s[*i] (digits); 0 when there is none. */
static int jc_count(const unsigned char *s, size_t *i, size_t end,
                    size_t *out) {
  size_t v = 0, k = *i;
  while (k < end && s[k] >= '0' && s[k] <= '9') {
    v = v * 10 + (size_t)(s[k] - '0');
    if (v > 65535) return 0;        /* PCRE2's bound: not compiled anyway */
    k++;
  }
  if (k == *i) return 0;
  *i = k;
  *out = v;
  return 1;
}

/* Fill p->atoms and p->sets from 'src' when the pattern is of the shape
** above; sets p->simple. */
static void jc_simple_parse(jc_pattern *p, const char *src, size_t len) {
  const unsigned char *s = (const unsigned char *)src;
  size_t i = 1, end = len - 1;
  int n = 0, k, j;
  unsigned b;
  p->simple = 0;
  p->search = 0;
  if (len == 0) return;
  if (len < 2 || s[0] != '^' || s[end] != '$') {
    /* unanchored: "\\S" or "[a-z]" (one atom, once or '+') is the search
    ** for one character of the set; the '^' or '$' of any other shape
    ** stops the parse below */
    p->search = 1;
    i = 0;
    end = len;
  }
  memset(p->sets, 0, sizeof p->sets);
  while (i < end) {
    jc_patom *a;
    jc_pset set;
    unsigned char ch = s[i];
    if (n == JC_SIMPLE_ATOMS) return;
    set.sets = p->sets;
    set.bit = (unsigned short)(1u << n);
    a = &p->atoms[n++];
    a->min = a->max = 1;
    a->wide = a->nospace = 0;
    if (ch == '\\' && i + 1 < end && s[i + 1] == 'S') {
      /* ECMA-262 \S: all but white space (the negated class of \s) */
      static const char ascii_space[] = "\t\n\v\f\r ";
      const char *w;
      for (b = 0; b < 0x100; b++) p->sets[b] |= set.bit;
      for (w = ascii_space; *w; w++) p->sets[(unsigned char)*w] &= (unsigned short)~set.bit;
      a->wide = a->nospace = 1;
      i += 2;
    } else if (ch == '\\') {
      if (i + 1 >= end || !jc_set_escape(&set, s[i + 1])) return;
      i += 2;
    } else if (ch == '[') {
      if ((i = jc_set_class(s, i, end, &set, a)) == 0) return;
    } else if (ch < 0x20 || ch >= 0x7f || strchr(".^$|()[]{}*+?", ch)) {
      return;
    } else {
      jc_set_add(&set, ch);
      i++;
    }
    if (i < end && (s[i] == '*' || s[i] == '+' || s[i] == '?')) {
      a->min = s[i] == '+' ? 1 : 0;
      a->max = s[i] == '?' ? 1 : JC_NOMAX;
      i++;
    } else if (i < end && s[i] == '{') {
      i++;
      if (!jc_count(s, &i, end, &a->min)) return;
      a->max = a->min;
      if (i < end && s[i] == ',') {
        i++;
        a->max = JC_NOMAX;
        if (i < end && s[i] != '}' && !jc_count(s, &i, end, &a->max)) return;
      }
      if (i >= end || s[i] != '}' || a->max < a->min) return;
      i++;
    }
    if (i < end && (s[i] == '?' || s[i] == '+' || s[i] == '*' ||
                    s[i] == '{'))
      return;                       /* lazy, possessive, or repeated */
  }
  if (i != end) return;             /* an escape ate the final '$' */
  if (p->search && (n != 1 || p->atoms[0].min != 1 ||
                    (p->atoms[0].max != 1 && p->atoms[0].max != JC_NOMAX)))
    return;                         /* "a{2}", "a*": not one character */
  for (k = 0; k < n; k++) {         /* greedy is exact: see above */
    if (p->atoms[k].min == p->atoms[k].max) continue;
    for (j = k + 1; j < n; j++) {
      for (b = 0; b < 0x100; b++)   /* from 0x80: two wide atoms */
        if ((p->sets[b] >> k & 1) && (p->sets[b] >> j & 1)) return;
      if (p->atoms[j].min > 0) break;
    }
  }
  p->natoms = n;
  p->simple = 1;
  /* "^[A-Z]{3}-[0-9]{4}$": one length, each byte in the set of the atom
  ** at its position (what the greedy scan decides, without its loops);
  ** not with a wide atom, whose characters are not bytes */
  p->flen = 0;
  for (k = 0; k < n; k++) {
    size_t r;
    if (p->atoms[k].min != p->atoms[k].max || p->atoms[k].wide ||
        p->atoms[k].min > JC_SIMPLE_FIXED - p->flen) {
      p->flen = JC_NOMAX;
      break;
    }
    for (r = 0; r < p->atoms[k].min; r++)
      p->fbit[p->flen++] = (unsigned short)(1u << k);
  }
}

/* Match 's' against the atoms (p->simple): one greedy scan. */
static int jc_simple_match(const jc_pattern *p, const unsigned char *s,
                           size_t len) {
  const unsigned char *q = s, *end = s + len;
  int k;
  if (p->search) {              /* any character of atom 0's set */
    const jc_patom *a = &p->atoms[0];
    size_t n;
    while (q < end) {
      if (*q < 0x80) {
        if (p->sets[*q] & 1u) return JC_PATTERN_MATCH;
        q++;
      } else {                  /* well-formed UTF-8: the lead byte's length */
        n = *q < 0xE0 ? 2 : *q < 0xF0 ? 3 : 4;
        if ((size_t)(end - q) < n) return JC_PATTERN_NOMATCH;
        if (a->wide && !(a->nospace && jc_ecma_space(q, n)))
          return JC_PATTERN_MATCH;
        q += n;
      }
    }
    return JC_PATTERN_NOMATCH;
  }
  if (p->flen != JC_NOMAX) {
    size_t r;
    if (len != p->flen) return JC_PATTERN_NOMATCH;
    for (r = 0; r < len; r++)
      if ((p->sets[s[r]] & p->fbit[r]) == 0) return JC_PATTERN_NOMATCH;
    return JC_PATTERN_MATCH;
  }
  for (k = 0; k < p->natoms; k++) {
    const jc_patom *a = &p->atoms[k];
    const unsigned char *from = q, *stop;
    unsigned bit = 1u << k;
    if (a->wide && a->max == JC_NOMAX && a->min <= 1) {
      /* '*' or '+' (most): the ASCII run byte by byte, nothing counted */
      size_t n;
      for (;;) {
        while (q < end && *q < 0x80 && (p->sets[*q] & bit) != 0) q++;
        if (q >= end || *q < 0x80) break;
        n = *q < 0xE0 ? 2 : *q < 0xF0 ? 3 : 4;
        if ((size_t)(end - q) < n || (a->nospace && jc_ecma_space(q, n)))
          break;
        q += n;
      }
      if (q == from && a->min == 1) return JC_PATTERN_NOMATCH;
      continue;
    }
    if (a->wide) {              /* a character at a time, counted */
      size_t count = 0, n;
      while (q < end && count < a->max) {
        if (*q < 0x80) {
          if ((p->sets[*q] & bit) == 0) break;
          q++;
        } else {                /* well-formed UTF-8: the lead byte's length */
          n = *q < 0xE0 ? 2 : *q < 0xF0 ? 3 : 4;
          if ((size_t)(end - q) < n || (a->nospace && jc_ecma_space(q, n)))
            break;
          q += n;
        }
        count++;
      }
      if (count < a->min) return JC_PATTERN_NOMATCH;
      continue;
    }
    stop = (size_t)(end - q) > a->max ? q + a->max : end;
    while (q < stop && (p->sets[*q] & bit) != 0) q++;
    if ((size_t)(q - from) < a->min) return JC_PATTERN_NOMATCH;
  }
  return q == end ? JC_PATTERN_MATCH : JC_PATTERN_NOMATCH;
}

jc_pattern *jc_pattern_compile(lua_State *L, const char *src, size_t len,
                               char *msg, size_t msgsz, size_t *offset) {
  jc_pattern *p;
  int errcode = 0;
  PCRE2_SIZE erroff = 0;
  size_t ecma_off = 0;
  const char *ecma = jc_pattern_translate(L, src, len, &ecma_off);
  const char *schema_src = src;   /* the caller keeps it */
  size_t schema_len = len;
  src = lua_tolstring(L, -1, &len);
  p = (jc_pattern *)jc_newuserdata(L, sizeof(jc_pattern));
  p->code = NULL;
  p->jit = 0;
  p->simple = 0;
  p->search = 0;
  p->natoms = 0;
  p->flen = JC_NOMAX;
  jc_pattern_setmeta(L, JC_PATTERN_MT, jc_pattern_gc);
  if (ecma != NULL) {
    lua_remove(L, -2);
    if (msgsz > 0) {
      strncpy(msg, ecma, msgsz - 1);
      msg[msgsz - 1] = '\0';
    }
    *offset = ecma_off;
    return NULL;
  }
  /* From here to the store below no Lua API call runs. */
  jc_simple_parse(p, schema_src, schema_len);
  p->code = pcre2_compile((PCRE2_SPTR)src, (PCRE2_SIZE)len,
                          PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX,
                          &errcode, &erroff, NULL);
  lua_remove(L, -2);   /* the translated source, no longer needed */
  if (p->code == NULL) {
    if (msgsz > 0) {
      msg[0] = '\0';
      if (pcre2_get_error_message(errcode, (PCRE2_UCHAR *)msg, msgsz) < 0)
        msg[msgsz - 1] = '\0';
    }
    *offset = (size_t)erroff;
    return NULL;
  }
  /* JIT when available (about twice as fast); the interpreter otherwise.
  ** JIT matching honours the match limit too. A simple pattern is never
  ** matched by PCRE2 (its compile only checks the syntax): no JIT code. */
  p->jit = !p->simple && pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE) == 0;
  return p;
}

jc_matcher *jc_matcher_new(lua_State *L) {
  jc_matcher *m = (jc_matcher *)jc_newuserdata(L, sizeof(jc_matcher));
  m->md = NULL;
  m->mc = NULL;
  m->js = NULL;   /* made by the first search that needs it */
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
  if (!jc_utf8_valid((const unsigned char *)s, len)) return JC_PATTERN_BADUTF;
  return jc_pattern_match_utf8(p, m, s, len);
}

/* A JIT search of 's'; on running out of PCRE2's default 32 KiB stack,
** gives the matcher a stack of its own (once: kept and reused) and searches
** again. The failed first search cost at most what fits in 32 KiB of
** frames (about a thousand repetitions), and most subjects never need the
** second. A search that outgrows JC_PATTERN_JIT_STACK too is not tried with
** the interpreter: its heap frames are about nine times the JIT's (288
** bytes a character for "^(a|b)+$" against 32, PCRE2 10.42) and its
** depth limit is below such a subject's length, so it would fail as well,
** after a second search.
** Returns PCRE2's result. */
static int jc_jit_search(const jc_pattern *p, jc_matcher *m, const char *s,
                         size_t len) {
  int rc = pcre2_jit_match(p->code, (PCRE2_SPTR)s, (PCRE2_SIZE)len, 0, 0,
                           m->md, m->mc);
  if (rc != PCRE2_ERROR_JIT_STACKLIMIT || m->js != NULL) return rc;
  m->js = pcre2_jit_stack_create((PCRE2_SIZE)JC_PATTERN_JIT_STACK_START * 1024,
                                 (PCRE2_SIZE)JC_PATTERN_JIT_STACK * 1024,
                                 NULL);
  if (m->js == NULL) return PCRE2_ERROR_NOMEMORY;
  pcre2_jit_stack_assign(m->mc, NULL, m->js);
  return pcre2_jit_match(p->code, (PCRE2_SPTR)s, (PCRE2_SIZE)len, 0, 0,
                         m->md, m->mc);
}

int jc_pattern_match_utf8(const jc_pattern *p, jc_matcher *m, const char *s,
                          size_t len) {
  int rc;
  if (p->code == NULL || m->md == NULL || m->mc == NULL)
    return JC_PATTERN_ERROR;
  if (p->simple) return jc_simple_match(p, (const unsigned char *)s, len);
  if (p->jit)   /* no sanity checks: UTF-8 was checked just above */
    rc = jc_jit_search(p, m, s, len);
  else
    rc = pcre2_match(p->code, (PCRE2_SPTR)s, (PCRE2_SIZE)len, 0,
                     PCRE2_NO_UTF_CHECK, m->md, m->mc);
  if (rc >= 0) return JC_PATTERN_MATCH;
  switch (rc) {   /* each bound by its name: see pattern.h */
    case PCRE2_ERROR_NOMATCH:
      return JC_PATTERN_NOMATCH;
    case PCRE2_ERROR_MATCHLIMIT:
      return JC_PATTERN_LIMIT;
    case PCRE2_ERROR_JIT_STACKLIMIT:
      return JC_PATTERN_STACK;
    case PCRE2_ERROR_DEPTHLIMIT:
      return JC_PATTERN_DEPTH;
    case PCRE2_ERROR_HEAPLIMIT:
      return JC_PATTERN_HEAP;
    case PCRE2_ERROR_NOMEMORY:
      return JC_PATTERN_NOMEM;
    default:
      if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        return JC_PATTERN_BADUTF;
      return JC_PATTERN_ERROR;
  }
}

const char *jc_pattern_why(int rc) {
  switch (rc) {
    case JC_PATTERN_LIMIT: return "the match limit was hit";
    case JC_PATTERN_STACK: return "the JIT stack limit was hit";
    case JC_PATTERN_DEPTH: return "the backtracking depth limit was hit";
    case JC_PATTERN_HEAP: return "the heap limit was hit";
    case JC_PATTERN_NOMEM: return "out of memory";
    case JC_PATTERN_BADUTF: return "invalid UTF-8";
    default: return "PCRE2 failed";
  }
}
