/*
** parse.h: what other files of jsoncontract.core use from 'parse.c'.
*/
#ifndef JC_PARSE_H
#define JC_PARSE_H

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

#endif
