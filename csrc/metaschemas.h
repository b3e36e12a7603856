/*
** metaschemas.h: the built-in standard meta-schemas (metaschemas.c).
*/
#ifndef JC_METASCHEMAS_H
#define JC_METASCHEMAS_H

/* One meta-schema: its URI (no fragment) and its JSON text, in pieces to
** concatenate (a NULL-terminated array: C99 bounds one string literal). */
typedef struct jc_metaschema {
  const char *uri;
  const char *const *text;
} jc_metaschema;

/* Every built-in meta-schema; ends with { NULL, NULL }. */
extern const jc_metaschema jc_metaschemas[];

#endif
