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
 * cluster.env as XRES_MINICLUSTER_ADMIN_URL). {@code POST /rm-restart}, {@code POST
 * /rm-failover}, {@code POST /nm-kill?n=N}, {@code POST /nm-start?n=N}, {@code GET /nm-list}.
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
          body = yarn.rmRestart() + "\n";
          break;
        case "rm-failover":
          requirePost(post, verb);
          body = yarn.rmFailover() + "\n";
          break;
        case "nm-kill":
          requirePost(post, verb);
          body = yarn.nmKill(index(query, verb)) + "\n";
          break;
        case "nm-start":
          requirePost(post, verb);
          body = yarn.nmStart(index(query, verb)) + "\n";
          break;
        default:
          code = 404;
          body = "error: unknown verb '" + verb + "' (known: rm-restart, rm-failover, nm-kill, nm-start, nm-list)\n";
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

  private static int index(String query, String verb) {
    String v = null;
    if (query != null) {
      for (String kv : query.split("&")) {
        if (kv.startsWith("n=")) {
          v = kv.substring(2);
        }
      }
    }
    if (v == null) {
      throw new IllegalArgumentException("want the NodeManager's index, ?n=N");
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("NodeManager index '" + v + "' is not a number");
    }
  }
}
