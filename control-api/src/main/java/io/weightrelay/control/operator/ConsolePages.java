package io.weightrelay.control.operator;

import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.config.annotation.ViewControllerRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * {@code /console} is the console's page ({@code static/console/index.html}, served with its assets
 * by Spring's static resource handling, no build step). The page and its assets go out with a
 * content security policy that lets them load and call only this origin and submit no form, so
 * neither an injected script nor a page whose script failed to load can send the operator token
 * anywhere (the sign-in form is handled by the script, never submitted).
 */
@Configuration(proxyBeanMethods = false)
class ConsolePages implements WebMvcConfigurer {

    static final String POLICY =
            "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none';"
                    + " object-src 'none'";

    @Override
    public void addViewControllers(ViewControllerRegistry registry) {
        registry.addRedirectViewController("/console", "/console/");
        registry.addViewController("/console/").setViewName("forward:/console/index.html");
    }

    @Bean
    FilterRegistrationBean<Filter> consoleHeaders() {
        Filter headers =
                (request, response, chain) -> {
                    HttpServletResponse http = (HttpServletResponse) response;
                    http.setHeader("Content-Security-Policy", POLICY);
                    http.setHeader("X-Content-Type-Options", "nosniff");
                    http.setHeader("Referrer-Policy", "no-referrer");
                    http.setHeader("Cache-Control", "no-cache");
                    chain.doFilter(request, response);
                };
        FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>(headers);
        registration.addUrlPatterns("/console", "/console/*");
        registration.setName("consoleHeaders");
        return registration;
    }
}
