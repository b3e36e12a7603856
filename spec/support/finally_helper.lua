-- busted's `finally(fn)` keeps only the last function a test gives it (busted 2.x: each call
-- replaces the one before), so a test that registered two cleanups ran one of them: servers and
-- workers started early in a test outlived it. Loaded as busted's helper (.busted), this makes
-- every `finally(fn)` count: after the test, the last registered runs first, and each runs even
-- when one before it failed (the first failure is then reported).
local busted = require "busted"

busted.subscribe({ "test", "start" }, function(element)
    local env = element.env
    local register = env and env.finally
    if register then
        local cleanups = {}
        register(function()
            local first_err
            for i = #cleanups, 1, -1 do
                local ok, err = pcall(cleanups[i])
                if not ok and first_err == nil then first_err = err end
            end
            if first_err ~= nil then error(first_err, 0) end
        end)
        env.finally = function(fn) cleanups[#cleanups + 1] = fn end
    end
    return nil, true
end)
