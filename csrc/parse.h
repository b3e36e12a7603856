/*
** parse.h: what other files of jsoncontract.core use from 'parse.c'.
*/
#ifndef JC_PARSE_H
#define JC_PARSE_H

#include "compat.h"
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

/*
** Parse 'text' ('len' bytes, followed by a '\0' byte: a Lua string's
** bytes) as exactly one JSON value, the way core.decode does (see
** 'jc_decode' in parse.c for the values and the kinds). The string holding
** 'text' must stay on the stack. 'max_depth' in 1..JC_MAX_DEPTH_LIMIT
** levels; 'max_bytes' is checked before parsing.
** Returns 1 with the value pushed, or 2 with nil and the err pushed.
** Raises only memory errors.
** Stack: [-0, +1 or +2, m]
*/
int jc_parse_text(lua_State *L, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes);

/*
** Read the options table at stack index 'arg' (none or nil: defaults) into
** '*max_depth' (levels, default 1000, 1..3000) and '*max_bytes' (bytes,
** default 64 MiB). Raises on a non-table, an unknown option or a value
** out of range, naming argument 'arg'.
** Stack: [-0, +0, v]
*/
void jc_parse_opts(lua_State *L, int arg, size_t *max_depth,
                   size_t *max_bytes);

#endif
