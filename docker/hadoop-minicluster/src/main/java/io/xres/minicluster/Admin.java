package io.xres.minicluster;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * The cluster's control channel for the fault verbs: HTTP on 127.0.0.1 only (port in
 * cluster.env as XRES_MINICLUSTER_ADMIN_URL). {@code POST /rm-restart[?down=SECONDS]},
 * {@code POST /rm-stop}, {@code POST /rm-start}, {@code POST /rm-failover}, {@code POST
 * /nm-kill?n=N}, {@code POST /nm-start?n=N}, {@code GET /nm-list}.
 * Each answers once the effect shows in the RM REST API: 200 and one line (or nm-list's
 * table), or 4xx/500 and {@code error: <why>}. One verb runs at a time.
 */
final class Admin {
  private final HttpServer server;

  Admin(Yarn yarn, int port) throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 8);
    server.createContext("/", ex -> handle(yarn, ex));
    server.setExecutor(Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "xres-admin");
      t.setDaemon(true);
      return t;
    }));
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  void stop() {
    server.stop(0);
  }

  private static void handle(Yarn yarn, HttpExchange ex) throws IOException {
    String verb = ex.getRequestURI().getPath().replaceFirst("^/", "");
    String query = ex.getRequestURI().getQuery();
    int code = 200;
    String body;
    try {
      boolean post = ex.getRequestMethod().equals("POST");
      switch (verb) {
        case "nm-list":
          body = yarn.nmList();
          break;
        case "rm-restart":
          requirePost(post, verb);
          body = yarn.rmRestart(number(query, "down", 0, verb) * 1000L) + "\n";
          break;
        case "rm-stop":
          requirePost(post, verb);
          body = yarn.rmStop() + "\n";
          break;
        case "rm-start":
          requirePost(post, verb);
          body = yarn.rmStart() + "\n";
          break;
        case "rm-failover":
          requirePost(post, verb);
          body = yarn.rmFailover() + "\n";
          break;
        case "nm-kill":
          requirePost(post, verb);
          body = yarn.nmKill(number(query, "n", -1, verb)) + "\n";
          break;
        case "nm-start":
          requirePost(post, verb);
          body = yarn.nmStart(number(query, "n", -1, verb)) + "\n";
          break;
        default:
          code = 404;
          body = "error: unknown verb '" + verb + "' (known: rm-restart, rm-stop, rm-start, rm-failover, nm-kill, nm-start, nm-list)\n";
      }
    } catch (IllegalArgumentException e) {
      code = 400;
      body = "error: " + verb + ": " + e.getMessage() + "\n";
    } catch (IllegalStateException e) {
      code = 409;
      body = "error: " + verb + ": " + e.getMessage() + "\n";
    } catch (Exception e) {
      code = 500;
      body = "error: " + verb + ": " + Main.oneLine(e) + "\n";
    }
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    ex.sendResponseHeaders(code, b.length);
    try (OutputStream os = ex.getResponseBody()) {
      os.write(b);
    }
  }

  private static void requirePost(boolean post, String verb) {
    if (!post) {
      throw new IllegalArgumentException(verb + " changes the cluster: use POST");
    }
  }

  /** The non-negative number ?name=N of the query; def when absent (-1: required). */
  private static int number(String query, String name, int def, String verb) {
    String v = null;
    if (query != null) {
      for (String kv : query.split("&")) {
        if (kv.startsWith(name + "=")) {
          v = kv.substring(name.length() + 1);
        }
      }
    }
    if (v == null) {
      if (def < 0) {
        throw new IllegalArgumentException("want ?" + name + "=N");
      }
      return def;
    }
    try {
      int n = Integer.parseInt(v);
      if (n < 0) {
        throw new NumberFormatException("negative");
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + "='" + v + "' is not a non-negative number");
    }
  }
}
