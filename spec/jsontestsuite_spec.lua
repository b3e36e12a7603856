-- core.decode against JSONTestSuite (nst/JSONTestSuite, test_parsing/):
-- every y_ file is accepted and round-trips, every n_ file is rejected as
-- "format", and every i_ file goes the way decided below.
local core = require "jsoncontract.core"
local util = require "support.util"

local DIR = util.shared("corpora/JSONTestSuite/test_parsing")

-- y_ files we reject on purpose: RFC 8259 §4 says names SHOULD be unique;
-- the format gate never picks one of two answers silently.
local Y_REJECTED = {
    ["y_object_duplicated_key.json"] = "duplicate_key",
    ["y_object_duplicated_key_and_value.json"] = "duplicate_key",
}

-- Implementation-defined cases: "accept", or the kind we reject with.
local I_DECISIONS = {
    ["i_number_double_huge_neg_exp.json"] = "accept",        -- underflows to 0
    ["i_number_huge_exp.json"] = "number_out_of_range",
    ["i_number_neg_int_huge_exp.json"] = "number_out_of_range",
    ["i_number_pos_double_huge_exp.json"] = "number_out_of_range",
    ["i_number_real_neg_overflow.json"] = "number_out_of_range",
    ["i_number_real_pos_overflow.json"] = "number_out_of_range",
    ["i_number_real_underflow.json"] = "accept",             -- underflows to 0
    ["i_number_too_big_neg_int.json"] = "accept",            -- a float
    ["i_number_too_big_pos_int.json"] = "accept",            -- a float
    ["i_number_very_big_negative_int.json"] = "accept",      -- a float
    ["i_object_key_lone_2nd_surrogate.json"] = "invalid_surrogate",
    ["i_string_1st_surrogate_but_2nd_missing.json"] = "invalid_surrogate",
    ["i_string_1st_valid_surrogate_2nd_invalid.json"] = "invalid_surrogate",
    ["i_string_UTF-16LE_with_BOM.json"] = "unexpected_character",
    ["i_string_UTF-8_invalid_sequence.json"] = "invalid_utf8",
    ["i_string_UTF8_surrogate_U+D800.json"] = "invalid_utf8",
    ["i_string_incomplete_surrogate_and_escape_valid.json"] = "invalid_surrogate",
    ["i_string_incomplete_surrogate_pair.json"] = "invalid_surrogate",
    ["i_string_incomplete_surrogates_escape_valid.json"] = "invalid_surrogate",
    ["i_string_invalid_lonely_surrogate.json"] = "invalid_surrogate",
    ["i_string_invalid_surrogate.json"] = "invalid_surrogate",
    ["i_string_invalid_utf-8.json"] = "invalid_utf8",
    ["i_string_inverted_surrogates_U+1D11E.json"] = "invalid_surrogate",
    ["i_string_iso_latin_1.json"] = "invalid_utf8",
    ["i_string_lone_second_surrogate.json"] = "invalid_surrogate",
    ["i_string_lone_utf8_continuation_byte.json"] = "invalid_utf8",
    ["i_string_not_in_unicode_range.json"] = "invalid_utf8",
    ["i_string_overlong_sequence_2_bytes.json"] = "invalid_utf8",
    ["i_string_overlong_sequence_6_bytes.json"] = "invalid_utf8",
    ["i_string_overlong_sequence_6_bytes_null.json"] = "invalid_utf8",
    ["i_string_truncated-utf-8.json"] = "invalid_utf8",
    ["i_string_utf16BE_no_BOM.json"] = "unexpected_character",
    ["i_string_utf16LE_no_BOM.json"] = "unexpected_character",
    ["i_structure_500_nested_arrays.json"] = "accept",
    ["i_structure_UTF-8_BOM_empty_object.json"] = "unexpected_character",
}

local function list(dir)
    local names = {}
    local ok, lfs = pcall(require, "lfs")
    if ok then
        if not lfs.attributes(dir, "mode") then return nil end
        for name in lfs.dir(dir) do
            if name:match("%.json$") then names[#names + 1] = name end
        end
    else
        local p = io.popen('ls "' .. dir .. '" 2>/dev/null')
        for name in p:lines() do
            if name:match("%.json$") then names[#names + 1] = name end
        end
        p:close()
        if #names == 0 then return nil end
    end
    table.sort(names)
    return names
end

local read = util.slurp

-- Deep equality that tells arrays from objects and integers from floats.
local same = util.same_json

describe("jsoncontract.core decode() on JSONTestSuite", function()
    local names = list(DIR)
    if not names then
        it("runs the suite", function()
            pending("JSONTestSuite not found at " .. DIR)
        end)
        return
    end

    it("finds the suite's files", function()
        assert.is_true(#names > 300)
    end)

    for _, name in ipairs(names) do
        local class = name:sub(1, 2)
        if class == "y_" and not Y_REJECTED[name] then
            it("accepts and round-trips " .. name, function()
                local text = read(DIR .. "/" .. name)
                local v, err = core.decode(text)
                assert.is_nil(err)
                assert.is_not_nil(v)
                local again = core.decode(core.encode(v))
                assert.is_true(same(v, again))
            end)
        elseif class == "y_" then
            it("rejects " .. name .. " on purpose", function()
                local v, err = core.decode(read(DIR .. "/" .. name))
                assert.is_nil(v)
                assert.equal(Y_REJECTED[name], err.kind)
            end)
        elseif class == "n_" then
            it("rejects " .. name, function()
                local text = read(DIR .. "/" .. name)
                local v, err = core.decode(text)
                assert.is_nil(v)
                assert.equal("format", err.category)
                assert.equal("string", type(err.kind))
                assert.is_true(err.offset >= 0 and err.offset <= #text)
                assert.is_true(err.line >= 1 and err.column >= 1)
            end)
        elseif class == "i_" then
            it("decides " .. name .. " as recorded", function()
                local decision = I_DECISIONS[name]
                assert.is_not_nil(decision, "no decision recorded for " .. name)
                local v, err = core.decode(read(DIR .. "/" .. name))
                if decision == "accept" then
                    assert.is_nil(err)
                    assert.is_not_nil(v)
                else
                    assert.is_nil(v)
                    assert.equal("format", err.category)
                    assert.equal(decision, err.kind)
                end
            end)
        end
    end
end)
