/*
** parse.h: what other files of jsoncontract.core use from 'parse.c'.
*/
#ifndef JC_PARSE_H
#define JC_PARSE_H

#include "compat.h"
#include "tape.h"
#include "utf8.h"
#include <stddef.h>

/* Registry name of the tape core.decode reuses between calls. */
#define JC_DECODE_TAPE "jsoncontract.decode_tape"

/*
** Parse 'text' ('len' bytes, followed by a '\0' byte: a Lua string's
** bytes, which must stay reachable while the tape is read) as exactly one
** JSON value into tape 't' (reset by the caller), strictly (RFC 8259; see
** core.decode in parse.c for the kinds). 'max_depth' in
** 1..JC_MAX_DEPTH_LIMIT levels; 'max_bytes' is checked before parsing.
** Returns 0 with the value at tape entry 0 (nothing pushed), or 2 with
** nil and the format err pushed. Raises only memory errors.
** Stack: [-0, +0 or +2, m]
*/
int jc_parse_tape(lua_State *L, jc_tape *t, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes);

/*
** Parse 'text' like 'jc_parse_tape' and push the Lua value as core.decode
** makes it. Returns 1 with the value pushed, or 2 with nil and the err
** pushed. Raises only memory errors.
** Stack: [-0, +1 or +2, m]
*/
int jc_parse_text(lua_State *L, const char *text, size_t len,
                  size_t max_depth, size_t max_bytes);

/*
** Read the options table at stack index 'arg' (none or nil: defaults) into
** '*max_depth' (levels, default 1000, 1..3000) and '*max_bytes' (bytes,
** default 64 MiB), with core.decode's option table. Raises on a non-table,
** an unknown option or a value out of range, naming argument 'arg'.
** Stack: [-0, +0, v]
*/
void jc_parse_opts(lua_State *L, int arg, size_t *max_depth,
                   size_t *max_bytes);

#endif
