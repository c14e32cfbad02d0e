SELECT fencing.protect_table('inventory');
