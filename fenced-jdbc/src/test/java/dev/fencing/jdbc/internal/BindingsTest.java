package dev.fencing.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BindingsTest {

    @Test
    void refusesFragmentsThatCouldCloseTheLibrarysParenthesesAndEscapeTheFence() {
        assertThatThrownBy(() -> Bindings.referencedNames("predicate", "stock >= :qty) OR (true"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'stock >= :qty) OR (true'")
                .hasMessageContaining("unbalanced");
        assertThatThrownBy(() -> Bindings.referencedNames("expression", "0), \"sku\" = ('x'"))
                .hasMessageContaining("unbalanced");
        assertThatThrownBy(() -> Bindings.referencedNames("predicate", "name = 'open"))
                .hasMessageContaining("unclosed quote");
    }

    @Test
    void acceptsBalancedFragmentsIncludingParenthesesInsideQuotes() {
        assertThat(Bindings.referencedNames("predicate", "(stock >= :qty) AND (note <> ')(')"))
                .containsExactly("qty");
        assertThat(Bindings.referencedNames("expression", "coalesce(stock, 0) - :qty::bigint"))
                .containsExactly("qty");
        assertThat(Bindings.referencedNames("predicate", "label = 'it''s (fine'"))
                .isEmpty();
    }
}
