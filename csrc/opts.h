/*
** opts.h: one table-driven reader for the options table of every C entry
** point (decode, compile, validate, check). A spec lists the names, types
** and ranges; the reader raises with one wording for all:
**   bad argument #N to 'f' (unknown option 'x')
**   bad argument #N to 'f' (option 'x' must be <expect>)
*/
#ifndef JC_OPTS_H
#define JC_OPTS_H

#include "jc.h"

enum { JC_OPT_BOOL, JC_OPT_INT, JC_OPT_STRING, JC_OPT_FUNCTION };

typedef struct jc_opt {
  const char *name;       /* NULL ends the list */
  int type;               /* JC_OPT_* */
  double lo, hi;          /* JC_OPT_INT: inclusive range */
  const char *expect;     /* words for the message: "a boolean" */
  const char *const *choices;   /* JC_OPT_STRING: allowed values or NULL */
} jc_opt;

typedef struct jc_optval {
  int set;                /* present in the table */
  int b;                  /* JC_OPT_BOOL */
  double n;               /* JC_OPT_INT */
  const char *s;          /* JC_OPT_STRING (the string stays in the table) */
  int choice;             /* JC_OPT_STRING with choices: its index */
} jc_optval;

/*
** Read the options table at 'arg' (none or nil: nothing set) against
** 'specs' into 'out' (one per spec, same order). A JC_OPT_FUNCTION value
** is only checked (read it from the table yourself).
** Raises on a non-table, a non-string or unknown name, a wrong type or a
** value out of range. Stack: [-0, +0, v]
*/
void jc_opts_read(lua_State *L, int arg, const jc_opt *specs, jc_optval *out);

#endif
