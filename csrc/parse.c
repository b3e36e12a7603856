/* parse.c: placeholder until the parse area lands. */
#include "jc.h"

void jc_parse_open(lua_State *L) { (void)L; }
