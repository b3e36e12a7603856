-- A contract file for spec/rules_nginx_spec.lua, loaded with jc.load_contract (as the gateway
-- loads its contract files): its rules are closures of this file, so they run in the rules'
-- sandbox, and so does the helper they call. Not part of the library.
local jc = require "jsoncontract"

local exit = os.exit -- (nil in the sandbox)
local function shell() return io.popen("id"):read("*a") end

local M = {}
M.contract = jc.contract { name = "sandboxed", version = "1", instructions = "x",
    schema = { type = "object" },
    rules = {
        { name = "exit", check = function(v) if v.exit then exit(3) end end },
        { name = "shell", check = function(v) if v.shell then return shell() end end },
    } }
return M
