/*
** utf8.c: UTF-8 helpers shared by the parser, the encoder and the schema
** gate (RFC 3629). See utf8.h.
*/
#include "utf8.h"

#include <string.h>

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
unsigned long jc_utf8_decode(const unsigned char *s, size_t n) {
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
size_t jc_utf8_encode(unsigned long cp, unsigned char *o) {
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


size_t jc_utf8_chars(const char *s, size_t len) {
  size_t i = 0, cont = 0;
#if defined(__GNUC__)
  for (; i + 8 <= len; i += 8) {
    unsigned long long w;
    memcpy(&w, s + i, 8);
    if (w & 0x8080808080808080ULL)   /* bit 7 set, bit 6 clear: 10xxxxxx */
      cont += (size_t)__builtin_popcountll(w & ~(w << 1) &
                                           0x8080808080808080ULL);
  }
#endif
  for (; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) == 0x80) cont++;
  return len - cont;
}

/* Is s[0..len) well-formed UTF-8 (RFC 3629: no overlongs, no surrogates,
** nothing above U+10FFFF)? Runs of ASCII go eight bytes at a time. */
int jc_utf8_valid(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c < 0x80) {
      while (i + 8 <= len) {
        unsigned long long w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL) break;
        i += 8;
      }
      if (i < len && s[i] < 0x80) i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      if (i + 1 >= len || (s[i + 1] & 0xC0) != 0x80) return 0;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      unsigned c1;
      if (i + 2 >= len) return 0;
      c1 = s[i + 1];
      if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      unsigned c1;
      if (i + 3 >= len) return 0;
      c1 = s[i + 1];
      if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 ||
          (s[i + 3] & 0xC0) != 0x80)
        return 0;
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
      i += 4;
    } else {
      return 0;
    }
  }
  return 1;
}

