/* pattern.c: placeholder until the schema area lands. */
#include "jc.h"
typedef int jc_pattern_placeholder;
