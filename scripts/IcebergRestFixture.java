// Apache Iceberg's reference REST catalog server, bound to one address.
//
// This is org.apache.iceberg.rest.RESTCatalogServer (iceberg-open-api's test
// fixtures, what the apache/iceberg-rest-fixture image runs) with three
// differences: the SQLite database is a file (below); Jetty listens on
// REST_HOST (default 127.0.0.1) rather than on every interface; and port 0
// picks a free port, printed on stdout as
// "iceberg-rest-fixture listening on http://HOST:PORT" once it serves. The
// catalog behind it is the same: Iceberg's JdbcCatalog on SQLite through
// Iceberg's own RESTCatalogAdapter and RESTCatalogServlet (iceberg-core's
// test jar), so every request is handled by Iceberg's code, not floe's.
//
// Environment, as the reference server reads it: CATALOG_WAREHOUSE (the
// warehouse URI, e.g. file:///dir), CATALOG_URI (default: a SQLite file in
// the temporary directory, removed at exit, where the reference server has
// jdbc:sqlite::memory:, which breaks under concurrent requests: see main),
// CATALOG_IO__IMPL and any other CATALOG_* variable (CATALOG_A_B__C is the
// catalog property a.b-c); REST_PORT (default 8181). Added here: REST_HOST,
// and REST_TOKEN: when set, every request but the OAuth2 token exchange
// (POST /v1/oauth/tokens) must carry "Authorization: Bearer <REST_TOKEN>" or
// gets 401, so that a client's credentials are seen to be sent.
//
// Run by scripts/iceberg-rest-fixture.sh (java -cp <its classpath> this file).

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.File;
import java.io.IOException;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class IcebergRestFixture {
  public static void main(String[] args) throws Exception {
    Map<String, String> env = System.getenv();
    Map<String, String> props = new HashMap<>();
    // RCKUtils.environmentCatalogConfig: CATALOG_X_Y__Z -> x.y-z.
    for (Map.Entry<String, String> e : env.entrySet()) {
      if (e.getKey().startsWith("CATALOG_")) {
        String k = e.getKey().substring("CATALOG_".length()).replace("__", "-").replace("_", ".")
            .toLowerCase(Locale.ROOT);
        props.put(k, e.getValue());
      }
    }
    props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    if (!props.containsKey(CatalogProperties.URI)) {
      // Not the reference server's jdbc:sqlite::memory:, which gives each
      // pooled connection a database of its own: under concurrent requests
      // a second connection finds no iceberg_tables (500s, and 404s for
      // tables that exist). A file is one database for all of them.
      File db = File.createTempFile("iceberg-rest-fixture", ".db");
      db.deleteOnExit();
      props.put(CatalogProperties.URI, "jdbc:sqlite:" + db.getAbsolutePath());
    }
    props.putIfAbsent("jdbc.schema-version", "V1");
    if (!props.containsKey(CatalogProperties.WAREHOUSE_LOCATION)) {
      throw new IllegalArgumentException("CATALOG_WAREHOUSE is required");
    }
    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());

    String host = env.getOrDefault("REST_HOST", "127.0.0.1");
    int port = Integer.parseInt(env.getOrDefault("REST_PORT", "8181"));
    String token = env.getOrDefault("REST_TOKEN", "");

    Server server = new Server();
    ServerConnector conn = new ServerConnector(server);
    conn.setHost(host);
    conn.setPort(port);
    server.addConnector(conn);
    ServletContextHandler ctx = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    ctx.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");
    if (!token.isEmpty()) {
      ctx.addFilter(new FilterHolder(new Filter() {
        @Override
        public void doFilter(ServletRequest req, ServletResponse rsp, FilterChain chain)
            throws IOException, ServletException {
          HttpServletRequest r = (HttpServletRequest) req;
          // The OAuth2 token endpoint stays open: the adapter answers a
          // client_credentials grant for client C with the token
          // "client-credentials-token:sub=C" (it checks no secret), so
          // REST_TOKEN set to that lets a client configured with C's
          // credential in, after its token exchange.
          boolean tokens = r.getRequestURI().endsWith("/v1/oauth/tokens");
          if (!tokens && !("Bearer " + token).equals(r.getHeader("Authorization"))) {
            HttpServletResponse h = (HttpServletResponse) rsp;
            h.setStatus(401);
            h.setContentType("application/json");
            h.getWriter().write("{\"error\":{\"message\":\"missing or wrong bearer token\","
                + "\"type\":\"NotAuthorizedException\",\"code\":401}}");
            return;
          }
          chain.doFilter(req, rsp);
        }
      }), "/*", EnumSet.of(DispatcherType.REQUEST));
    }
    server.setHandler(ctx);
    server.start();
    System.out.println("iceberg-rest-fixture listening on http://" + host + ":" + conn.getLocalPort());
    System.out.flush();
    server.join();
  }
}
