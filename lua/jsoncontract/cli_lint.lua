--- Alias kept for callers of the old name: the lint command is `jsoncontract.cli.lint`, run
-- through `jsoncontract.cli.main`.
-- @module jsoncontract.cli_lint
local _M = { _VERSION = require("jsoncontract.core")._VERSION }

--- Run `jsoncontract lint` with these arguments (with or without the leading "lint").
-- @tparam table argv strings
-- @tparam[opt] table env `stdout`, `stderr` (see `jsoncontract.cli`)
-- @treturn integer exit status
function _M.run(argv, env)
    local list = { "lint" }
    for i = argv[1] == "lint" and 2 or 1, #argv do list[#list + 1] = argv[i] end
    return require("jsoncontract.cli").main(list, env)
end

--- The old `USAGE` text: the lint command's help, from its parser.
-- @field USAGE
return setmetatable(_M, { __index = function(_, k)
    if k ~= "USAGE" then return nil end
    local _, _, _, parsers = require("jsoncontract.cli").parser()
    return parsers.lint:get_help() .. "\n"
end })
