-- luacheck: the globals common to Lua 5.1-5.4 and LuaJIT (STYLE.md §5); specs add busted's.
std = "min"
max_line_length = 120
-- Present only on some interpreters; code tests for them before use.
read_globals = { "jit", "utf8", "ngx", math = { fields = { "type", "mininteger", "maxinteger" } } }
-- Specs and benches carry long JSON literals as data.
files["spec/"] = { std = "min+busted", max_line_length = false }
files["bench/"] = { max_line_length = false }
exclude_files = { "bench/node_modules/" }
