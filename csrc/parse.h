/*
** parse.h: what other files of jsoncontract.core use from 'parse.c'.
*/
#ifndef JC_PARSE_H
#define JC_PARSE_H

#include "compat.h"
#include "tape.h"
#include "utf8.h"
#include <stddef.h>

/* The parser's bounds, for every entry point that parses text (core.decode,
** core.parse, validator:check and check_json, the stream decoder) and for
** the rules gate's copy (core.MAX_DEPTH). */
#ifndef JC_MAX_DEPTH
#define JC_MAX_DEPTH 1000               /* default 'max_depth' (levels) */
#endif
#ifndef JC_MAX_DEPTH_LIMIT
#define JC_MAX_DEPTH_LIMIT 3000         /* largest 'max_depth' accepted */
#endif
#ifndef JC_MAX_BYTES
#define JC_MAX_BYTES (64 * 1024 * 1024) /* default 'max_bytes' (bytes) */
#endif
#define JC_STR_(x) #x
#define JC_STR(x) JC_STR_(x)
/* the option table entries of 'max_depth' and 'max_bytes' (jc_opt, opts.h) */
#define JC_PARSE_OPTS \
  { "max_depth", JC_OPT_INT, 1, JC_MAX_DEPTH_LIMIT, \
    "an integer from 1 to " JC_STR(JC_MAX_DEPTH_LIMIT), NULL }, \
  { "max_bytes", JC_OPT_INT, 0, 281474976710656.0, "an integer >= 0", NULL }

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
** 'jc_parse_tape' without the err: returns 0, or 1 on a format error with
** nothing pushed (no error metatables needed: a state of its own may call
** it). Raises only memory errors.
** Stack: [-0, +0, m]
*/
int jc_parse_tape_quiet(lua_State *L, jc_tape *t, const char *text,
                        size_t len, size_t max_depth, size_t max_bytes);

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
** '*max_depth' (levels, default JC_MAX_DEPTH, 1..JC_MAX_DEPTH_LIMIT) and
** '*max_bytes' (bytes, default JC_MAX_BYTES), with core.decode's option
** table. Raises on a non-table, an unknown option or a value out of range,
** naming argument 'arg'.
** Stack: [-0, +0, v]
*/
void jc_parse_opts(lua_State *L, int arg, size_t *max_depth,
                   size_t *max_bytes);

#endif
