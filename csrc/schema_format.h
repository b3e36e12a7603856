/*
** schema_format.h: helpers of the schema gate that need no Lua values:
** 'format' checks (RFC 3339 dates and durations, hostnames, addresses,
** URIs, UUIDs, JSON Pointers) and RFC 3986 reference resolution for '$id'
** and '$ref'. Only the schema gate calls these.
*/
#ifndef JC_SCHEMA_FORMAT_H
#define JC_SCHEMA_FORMAT_H

#include "jc.h"

/* Formats the gate knows; JC_FMT_NONE for any other name (ignored). */
enum {
  JC_FMT_NONE, JC_FMT_DATE, JC_FMT_DATETIME, JC_FMT_TIME, JC_FMT_DURATION,
  JC_FMT_EMAIL, JC_FMT_HOSTNAME, JC_FMT_IPV4, JC_FMT_IPV6, JC_FMT_URI,
  JC_FMT_URIREF, JC_FMT_UUID, JC_FMT_REGEX, JC_FMT_JSONPTR, JC_FMT_RELJSONPTR,
  JC_FMT_IRI, JC_FMT_IRIREF, JC_FMT_URITEMPLATE, JC_FMT_IDNEMAIL
};

/* The JC_FMT_* of a format name ('format' keyword value). */
int jc_format_id(const char *name);

/*
** Is 's' (length 'len' bytes) a valid instance of format 'id'? Returns 1 or
** 0; JC_FMT_REGEX is not handled here (the schema gate compiles it with PCRE2) and
** returns 1. Calls no Lua API. Stack: [-0, +0, -]
*/
int jc_format_check(int id, const char *s, size_t len);

/*
** Push the RFC 3986 §5.2 resolution of reference 'ref' against 'base'
** (either may be relative; an empty base leaves 'ref' as it is, with dot
** segments removed). Stack: [-0, +1, m]
*/
void jc_uri_resolve(lua_State *L, const char *base, size_t blen,
                    const char *ref, size_t rlen);

#endif
