/*
** fuzz_differential.c: one validator, two ways in. The first input byte
** picks a schema; the rest is the reply text. validator:check(text)
** validates the tape the parser wrote; validator:validate(decode(text))
** validates the tape written from the Lua value. Both must give the same
** verdict and the same errors (pointer, keyword, schema_pointer, message),
** and check must fail with a format err exactly when decode does. Where a
** number has more digits than a double holds, the Lua value is rounded
** and the tape is exact: there only the format verdict is compared.
** The FFI entry points (csrc/ffi.c, LuaJIT's path) must agree with the C
** API: jc_ffi_check accepts exactly what check accepts, and the bytes it
** reports are check_json's accepted text; jc_ffi_validate_tape accepts a
** tape from core.parse exactly when validate(tape) does, and that one
** agrees with validate(value).
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* csrc/ffi.c, as lua/jsoncontract/ffi.lua declares them */
typedef struct jc_ffi_ctx jc_ffi_ctx;
struct jc_tv;
jc_ffi_ctx *jc_ffi_new(void);
int jc_ffi_check(jc_ffi_ctx *c, void *validator, const char *text,
                 size_t len, size_t max_depth, size_t max_bytes,
                 const struct jc_tv **entries, size_t *n, size_t *b,
                 size_t *e, char *errbuf, size_t errlen);
int jc_ffi_validate_tape(jc_ffi_ctx *c, void *validator, const void *tape,
                         char *errbuf, size_t errlen);
size_t jc_ffi_layout(int what);

/* ffi(validator, text [, tape]) -> check's result (0, 1 or -1), the
** accepted bytes' bounds (1-based, as string.sub takes them) or false,
** and validate_tape's result on 'tape' (or false without one). */
static int jc_diff_ffi(lua_State *L) {
  static jc_ffi_ctx *ctx = NULL;
  const struct jc_tv *entries;
  size_t len, n, b, e;
  char errbuf[256];
  const char *text = luaL_checklstring(L, 2, &len);
  void *v = lua_touserdata(L, 1);
  int r;
  if (ctx == NULL && (ctx = jc_ffi_new()) == NULL) abort();
  r = jc_ffi_check(ctx, v, text, len, jc_ffi_layout(5), jc_ffi_layout(6),
                   &entries, &n, &b, &e, errbuf, sizeof errbuf);
  lua_pushinteger(L, r);
  if (r == 0) {
    lua_pushinteger(L, (lua_Integer)b + 1);
    lua_pushinteger(L, (lua_Integer)e);
  } else {
    lua_pushboolean(L, 0);
    lua_pushboolean(L, 0);
  }
  if (lua_touserdata(L, 3) != NULL)
    lua_pushinteger(L, jc_ffi_validate_tape(ctx, v, lua_touserdata(L, 3),
                                            errbuf, sizeof errbuf));
  else
    lua_pushboolean(L, 0);
  return 4;
}

static const char jc_diff_lua[] =
  "local core, ffi = ...\n"
  "local S = {\n"
  " { type = 'object', required = { 'id' }, additionalProperties = false,\n"
  "   properties = { id = { type = 'string', pattern = '^T-[0-9]+$' },\n"
  "     n = { type = 'number', minimum = 0, maximum = 100, multipleOf = 0.5 },\n"
  "     tags = { type = 'array', items = { enum = { 'a', 'b', 1, true } },\n"
  "              uniqueItems = true, maxItems = 4 },\n"
  "     sub = { oneOf = { { type = 'null' }, { type = 'object',\n"
  "       required = { 'k' }, propertyNames = { maxLength = 3 } } } } } },\n"
  " { type = 'array', prefixItems = { { type = 'integer' } },\n"
  "   items = { anyOf = { { type = 'string', minLength = 2 },\n"
  "                        { type = 'array', contains = { const = 1 } } } } },\n"
  " { ['$defs'] = { t = { type = { 'object', 'array', 'number', 'string' },\n"
  "     additionalProperties = { ['$ref'] = '#/$defs/t' },\n"
  "     items = { ['$ref'] = '#/$defs/t' }, ['not'] = { const = 0 } } },\n"
  "   ['$ref'] = '#/$defs/t', unevaluatedProperties = false,\n"
  "   patternProperties = { ['^x'] = true } },\n"
  " true,\n"
  " { type = 'object', properties = {\n"
  "     e = { enum = { 'a', 'bb', 'ccc', 'dddd', 'e-e-e-e-e', 'ffffffffffffffff',\n"
  "       'ggggggggggggggggg', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 1 } },\n"
  "     f = { enum = { 'x', 'yy', 'zzzzzzzzzzzzzzzzzz' } },\n"
  "     u = { type = 'array', uniqueItems = true, items = { maxLength = 3 } },\n"
  "     s = { type = 'string', minLength = 2, maxLength = 3 } } },\n"
  "}\n"
  "local V = {}\n"
  "for i, s in ipairs(S) do V[i] = core.compile(s) end\n"
  "local function shape(err)\n"
  "  local out = {}\n"
  "  for i, e in ipairs(err.errors or {}) do\n"
  "    out[i] = table.concat({ e.pointer, e.keyword, e.schema_pointer,\n"
  "                            e.message }, '\\1')\n"
  "  end\n"
  "  return table.concat(out, '\\2')\n"
  "end\n"
  "return function(which, text)\n"
  "  local v = V[which % #V + 1]\n"
  "  local a, ea = v:check(text)\n"
  "  local d, ed = core.decode(text)\n"
  "  local tape = core.parse(text)\n"
  "  local fc, fb, fe, fv = ffi(v, text, tape)\n"
  "  if (fc == 0) ~= (a ~= nil) then return 'ffi check verdict differs' end\n"
  "  if fc == 0 and text:sub(fb, fe) ~= v:check_json(text) then\n"
  "    return 'ffi check: accepted text differs' end\n"
  "  if tape and (fv == 0) ~= (v:validate(tape) == true) then\n"
  "    return 'ffi validate_tape verdict differs' end\n"
  "  if d == nil then\n"
  "    if a ~= nil or ea.category ~= 'format' or ea.kind ~= ed.kind\n"
  "       or ea.offset ~= ed.offset then return 'format verdicts differ' end\n"
  "    return nil\n"
  "  end\n"
  "  if a == nil and ea.category == 'format' then return 'check: format err on decodable text' end\n"
  "  if text:find('%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d') then return nil end\n"
  "  local b, eb = v:validate(d)\n"
  "  if (a == nil) ~= (b == nil) then return 'verdicts differ' end\n"
  "  if tape and (v:validate(tape) == true) ~= (b == true) then\n"
  "    return 'validate(tape) and validate(value) differ' end\n"
  "  if a == nil then\n"
  "    if ea.kind ~= eb.kind then return 'kinds differ' end\n"
  "    if ea.kind == 'schema_mismatch' and shape(ea) ~= shape(eb) then\n"
  "      return 'errors differ:\\n' .. shape(ea) .. '\\n' .. shape(eb) end\n"
  "  end\n"
  "  return nil\n"
  "end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fn = LUA_NOREF;
  lua_State *L = jc_fuzz_state();
  if (size < 1) return 0;
  if (fn == LUA_NOREF) {
    if (luaL_loadstring(L, jc_diff_lua) != LUA_OK)
      jc_fuzz_die("differential: load", L);
    lua_pushvalue(L, JC_FUZZ_CORE);
    lua_pushcfunction(L, jc_diff_ffi);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) jc_fuzz_die("differential: setup", L);
    fn = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
  lua_pushinteger(L, data[0]);
  lua_pushlstring(L, (const char *)data + 1, size - 1);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) jc_fuzz_die("differential raised", L);
  if (!lua_isnil(L, -1)) jc_fuzz_die("differential", L);
  lua_settop(L, JC_FUZZ_CORE);
  return 0;
}
