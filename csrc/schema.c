/* schema.c: placeholder until the schema area lands. */
#include "jc.h"

void jc_schema_open(lua_State *L) { (void)L; }
