package dev.fencing.jdbc.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.ParsedSql;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlParser;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.TemplateEngine;
import org.jdbi.v3.core.statement.Update;

/**
 * Jdbi's {@link SqlParser} for the library's own statements, on {@link SqlFragment}'s lexer: it finds the
 * {@code :name} parameters where PostgreSQL reads them as outside every literal, and changes nothing else.
 * Jdbi's default parser reads literals another way and drops backslashes it finds outside what it takes for
 * one, which can turn a fragment that was checked as safe into one that escapes its row (see SqlFragment);
 * a user's own parser or template engine, configured on their Jdbi, must not touch the library's text
 * either (nor break its catalog queries, which use it too). Thread-safe.
 */
public final class StatementParser implements SqlParser {
    private static final StatementParser INSTANCE = new StatementParser();

    /** Statements already parsed; they come from StatementCache, so the same few. Bounded like it. */
    private static final int MAX_PARSED = StatementCache.MAX_CACHED_STATEMENTS;

    private final ConcurrentMap<String, ParsedSql> parsed = new ConcurrentHashMap<>();

    private StatementParser() {}

    /** An update of the library's on {@code handle}, read by this parser, rendered by no template engine. */
    public static Update update(Handle handle, String sql) {
        return handle.createUpdate(sql).setTemplateEngine(TemplateEngine.NOP).setSqlParser(INSTANCE);
    }

    /** A query of the library's, as {@link #update}. */
    public static Query query(Handle handle, String sql) {
        return handle.createQuery(sql).setTemplateEngine(TemplateEngine.NOP).setSqlParser(INSTANCE);
    }

    @Override
    public ParsedSql parse(String sql, StatementContext ctx) {
        ParsedSql result = parsed.get(sql);
        if (result == null) {
            result = parse(sql);
            if (parsed.size() < MAX_PARSED) {
                parsed.putIfAbsent(sql, result);
            }
        }
        return result;
    }

    static ParsedSql parse(String sql) {
        ParsedSql.Builder builder = ParsedSql.builder();
        int at = 0;
        for (SqlFragment.Parameter parameter : SqlFragment.parameters("statement", sql)) {
            builder.append(sql.substring(at, parameter.start()));
            builder.appendNamedParameter(parameter.name());
            at = parameter.end();
        }
        return builder.append(sql.substring(at)).build();
    }

    @Override
    public String nameParameter(String rawName, StatementContext ctx) {
        return ":" + rawName;
    }
}
