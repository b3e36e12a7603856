/*
** utf8.h: UTF-8 helpers (RFC 3629) for parse.c, encode.c and the schema
** gate. No Lua API.
*/
#ifndef JC_UTF8_H
#define JC_UTF8_H

#include <stddef.h>

/*
** Length of the well-formed UTF-8 sequence starting at 's' (1 to 4), or 0
** when the bytes at 's' are not one (overlong form, UTF-8 encoded surrogate,
** above U+10FFFF, stray continuation byte, truncated sequence). 's' must be
** followed by a byte that is not a continuation byte (a Lua string's
** terminating '\0' does), so the function never reads past the end.
** (RFC 3629 §4, the table of well-formed byte sequences.)
*/
size_t jc_utf8_len(const unsigned char *s);

/* Code point of the well-formed sequence of 'n' bytes at 's'. */
unsigned long jc_utf8_decode(const unsigned char *s, size_t n);

/* Write code point 'cp' (not a surrogate, <= 0x10FFFF) as UTF-8 at 'o';
** returns the number of bytes written (1 to 4). */
size_t jc_utf8_encode(unsigned long cp, unsigned char *o);

/* Is s[0..len) well-formed UTF-8 (RFC 3629: no overlongs, no surrogates,
** nothing above U+10FFFF)? Runs of ASCII go eight bytes at a time. */
int jc_utf8_valid(const unsigned char *s, size_t len);

/* Code points in s[0..len): the bytes that are not UTF-8 continuation
** bytes (10xxxxxx), eight at a time. */
size_t jc_utf8_chars(const char *s, size_t len);

#endif
